// Command uiassets writes the Jaeger UI's built files into a directory, for
// the query extension's ui.assets_path.
//
// The jaeger module on the Go module proxy has no UI: its release builds
// take the UI from a git submodule that the proxy's zip leaves out, so a
// `go build` of cmd/jaeger serves only a placeholder page. The module
// github.com/tonistiigi/jaeger-ui-rest embeds a built Jaeger UI (gzipped);
// this program unpacks it. Usage: uiassets DIR
package main

import (
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"

	jaegerui "github.com/tonistiigi/jaeger-ui-rest"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: uiassets DIR")
		os.Exit(2)
	}
	if err := unpack(jaegerui.FS(jaegerui.Config{}), os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "uiassets:", err)
		os.Exit(1)
	}
}

// unpack copies the tree under name "/" of src (an http.FileSystem, which
// is what the module offers) to dir.
func unpack(src http.FileSystem, dir string) error {
	var walk func(name string) error
	walk = func(name string) error {
		f, err := src.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if !fi.IsDir() {
			out, err := os.Create(dst)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, f); err != nil {
				out.Close()
				return err
			}
			return out.Close()
		}
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		entries, err := f.Readdir(-1)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := walk(path.Join(name, e.Name())); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk("/"); err != nil {
		return err
	}
	// index.html is what every UI page loads; without it the unpack failed.
	if _, err := fs.Stat(os.DirFS(dir), "index.html"); err != nil {
		return err
	}
	return nil
}
