package envvar_test

import (
	"os"
	"testing"

	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/libcarrier/envvar"
)

func getenv(name string) string { v, _ := os.LookupEnv(name); return v }

// state describes a variable: its value, or "<unset>".
func state(name string) string {
	if v, ok := os.LookupEnv(name); ok {
		return "=" + v
	}
	return "<unset>"
}

// unset removes name for the duration of the test and restores it after.
func unset(t *testing.T, name string) {
	t.Helper()
	t.Setenv(name, "") // registers the restore
	if err := os.Unsetenv(name); err != nil {
		t.Fatal(err)
	}
}

// setBefore gives name the value before points to for the duration of
// the test, or unsets it when before is nil.
func setBefore(t *testing.T, name string, before *string) {
	t.Helper()
	if before != nil {
		t.Setenv(name, *before)
	} else {
		unset(t, name)
	}
}

func TestSet(t *testing.T) {
	const name = "LIBCARRIER_TEST_SET"
	tests := []struct {
		name   string
		before *string
		m      map[string]any
		want   string
	}{
		{name: "sets an unset variable", m: map[string]any{"b": 2, "a": "x y"}, want: "=a=x%20y,b=2"},
		{name: "replaces without merging", before: ptr("old=1,a=0"), m: map[string]any{"a": 1}, want: "=a=1"},
		{name: "empty result unsets", before: ptr("old=1"), m: map[string]any{}, want: "<unset>"},
		{name: "all dropped unsets", before: ptr("old=1"), m: map[string]any{"bad key": 1, "n": nil}, want: "<unset>"},
		{name: "empty result on unset stays unset", m: nil, want: "<unset>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setBefore(t, name, tt.before)
			if _, err := envvar.Set(name, tt.m); err != nil {
				t.Fatal(err)
			}
			if got := state(name); got != tt.want {
				t.Errorf("after Set: %s, want %s", got, tt.want)
			}
		})
	}
}

func TestSetDefaultName(t *testing.T) {
	t.Setenv(libcarrier.EnvVar, "old=1")
	warns, err := envvar.Set("", map[string]any{"a": 1, "x,y": 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := state(libcarrier.EnvVar); got != "=a=1" {
		t.Errorf("%s: %s, want =a=1", libcarrier.EnvVar, got)
	}
	if len(warns) != 1 || warns[0].String() != `key "x,y": key contains ',': dropped` {
		t.Errorf("warnings %q, want the one on x,y", warns)
	}
}

func TestSetInvalidName(t *testing.T) {
	for _, name := range []string{"A=B", "A\x00B"} {
		if _, err := envvar.Set(name, map[string]any{"a": 1}); err == nil {
			t.Errorf("Set(%q) succeeded, want an error", name)
		}
		if _, err := envvar.Set(name, nil); err == nil {
			t.Errorf("Set(%q, nil) succeeded, want an error: unsetting must fail the same way", name)
		}
		restore, _, err := envvar.Publish(name, map[string]any{"a": 1})
		if err == nil {
			t.Errorf("Publish(%q) succeeded, want an error", name)
		}
		if restore == nil {
			t.Fatalf("Publish(%q) returned a nil restore", name)
		}
		restore() // must be harmless
	}
}

func TestPublish(t *testing.T) {
	const name = "LIBCARRIER_TEST_PUBLISH"
	tests := []struct {
		name   string
		before *string
		m      map[string]any
		during string
	}{
		{name: "unset restored to unset", m: map[string]any{"a": 1}, during: "=a=1"},
		{name: "value restored", before: ptr("old=%41"), m: map[string]any{"a": 1}, during: "=a=1"},
		{name: "empty value restored as empty", before: ptr(""), m: map[string]any{"a": 1}, during: "=a=1"},
		{name: "empty publication unsets then restores", before: ptr("old=1"), m: nil, during: "<unset>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setBefore(t, name, tt.before)
			want := state(name)
			restore, _, err := envvar.Publish(name, tt.m)
			if err != nil {
				t.Fatal(err)
			}
			if got := state(name); got != tt.during {
				t.Errorf("during Publish: %s, want %s", got, tt.during)
			}
			restore()
			if got := state(name); got != want {
				t.Errorf("after restore: %s, want %s", got, want)
			}
		})
	}
}

func TestPublishNested(t *testing.T) {
	const name = "LIBCARRIER_TEST_NESTED"
	unset(t, name)
	r1, _, err := envvar.Publish(name, map[string]any{"level": 1})
	if err != nil {
		t.Fatal(err)
	}
	r2, _, err := envvar.Publish(name, map[string]any{"level": 2})
	if err != nil {
		t.Fatal(err)
	}
	r3, _, err := envvar.Publish(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		restore func()
		want    string
	}{
		{r3, "=level=2"},
		{r2, "=level=1"},
		{r1, "<unset>"},
	}
	if got := state(name); got != "<unset>" {
		t.Errorf("innermost publication: %s, want <unset>", got)
	}
	for i, s := range steps {
		s.restore()
		if got := state(name); got != s.want {
			t.Errorf("after restore %d: %s, want %s", len(steps)-i, got, s.want)
		}
	}
}

func TestPublishRestoreOnce(t *testing.T) {
	const name = "LIBCARRIER_TEST_ONCE"
	t.Setenv(name, "orig=1")
	restore, _, err := envvar.Publish(name, map[string]any{"a": 1})
	if err != nil {
		t.Fatal(err)
	}
	restore()
	os.Setenv(name, "later=1") // someone else changes it afterwards
	restore()
	if got := state(name); got != "=later=1" {
		t.Errorf("a second restore changed the variable: %s", got)
	}
}

func TestPublishWarnings(t *testing.T) {
	const name = "LIBCARRIER_TEST_WARN"
	unset(t, name)
	restore, warns, err := envvar.Publish(name, map[string]any{"a": 1, "": 2})
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	if len(warns) != 1 || warns[0].String() != "empty key: dropped" {
		t.Errorf("warnings %q, want the one on the empty key", warns)
	}
}

func ptr(s string) *string { return &s }
