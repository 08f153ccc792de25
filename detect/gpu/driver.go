package gpu

import (
	"errors"
	"strconv"
)

// driverDir is where the NVIDIA driver describes its GPUs, one directory
// per PCI address.
const driverDir = "/proc/driver/nvidia/gpus"

// driverGPU is one GPU as the driver describes it.
type driverGPU struct {
	pci   uint64 // domain, bus, device, function: CUDA's PCI_BUS_ID order
	minor uint32 // of /dev/nvidia<minor>
	uuid  string // "GPU-…"
	model string
}

// parsePCI reads a PCI address "dddd:bb:dd.f" (hexadecimal, as the
// driver names its directories) into a number that sorts as the address.
func parsePCI(s string) (uint64, bool) {
	// Fields from the end: function, device, bus, then the domain.
	var key uint64
	var shift uint
	seps := [...]byte{'.', ':', ':'}
	widths := [...]int{1, 2, 2}
	for i, sep := range seps {
		j := len(s) - widths[i] - 1
		if j < 0 || s[j] != sep {
			return 0, false
		}
		v, err := strconv.ParseUint(s[j+1:], 16, 8)
		if err != nil || !isHex(s[j+1:]) {
			return 0, false
		}
		key |= v << shift
		shift += 8
		s = s[:j]
	}
	if len(s) == 0 || len(s) > 8 || !isHex(s) {
		return 0, false
	}
	dom, _ := strconv.ParseUint(s, 16, 32)
	return key | dom<<shift, true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return s != ""
}

// parseInformation reads the driver's information file of one GPU: the
// lines "Model:", "GPU UUID:" and "Device Minor:", whatever spaces and
// tabs follow the colon (Slurm's gpu/nvidia plugin reads the same lines).
// A missing or repeated line, a minor that is not decimal or a UUID that
// is not "GPU-" and a UUID is an error.
func parseInformation(text []byte) (driverGPU, error) {
	var g driverGPU
	var haveMinor, haveUUID, haveModel bool
	for len(text) > 0 {
		end := 0
		for end < len(text) && text[end] != '\n' {
			end++
		}
		line := text[:end]
		if end < len(text) {
			end++
		}
		text = text[end:]
		key, field, ok := cutField(line)
		if !ok {
			continue
		}
		// The switch on string(key) and the conversion of the value only
		// where it is kept allocate nothing for the driver's other lines.
		switch string(key) {
		case "Device Minor":
			value := string(field)
			if haveMinor {
				return g, errors.New("two Device Minor lines")
			}
			n, err := strconv.ParseUint(value, 10, 20) // Linux minors have 20 bits
			if err != nil || !isDigits(value) {
				return g, quotedError("Device Minor ", value, " is not a minor number")
			}
			g.minor, haveMinor = uint32(n), true
		case "GPU UUID":
			value := string(field)
			if haveUUID {
				return g, errors.New("two GPU UUID lines")
			}
			if !validUUID(value) {
				return g, quotedError("GPU UUID ", value, " is not GPU-<uuid>")
			}
			g.uuid, haveUUID = value, true
		case "Model":
			if haveModel {
				return g, errors.New("two Model lines")
			}
			g.model, haveModel = string(field), true
		}
	}
	switch {
	case !haveMinor:
		return g, errors.New("no Device Minor line")
	case !haveUUID:
		return g, errors.New("no GPU UUID line")
	case !haveModel:
		return g, errors.New("no Model line")
	}
	return g, nil
}

// quotedError is the error before, value quoted, after. Its own frame
// holds the quoting, off the parser's (the stack rule: package taskenv).
//
//go:noinline
func quotedError(before, value, after string) error {
	return errors.New(before + strconv.Quote(value) + after)
}

// cutField splits "Name: \t value" into name and value.
func cutField(line []byte) (key, value []byte, ok bool) {
	for i, c := range line {
		if c == ':' {
			return line[:i], trimSpace(line[i+1:]), true
		}
	}
	return nil, nil, false
}

// validUUID reports whether s is "GPU-" and a UUID in its 36-character
// form, the only form DCGM's UUID label and CUDA_VISIBLE_DEVICES use.
func validUUID(s string) bool {
	const prefix = "GPU-"
	if len(s) != len(prefix)+36 || s[:len(prefix)] != prefix {
		return false
	}
	u := s[len(prefix):]
	for i := 0; i < len(u); i++ {
		switch i {
		case 8, 13, 18, 23:
			if u[i] != '-' {
				return false
			}
		default:
			if !isHex(u[i : i+1]) {
				return false
			}
		}
	}
	return true
}

// readGPU reads the GPU of the driver's directory name into g.
//
//go:noinline
func (f *nodeFacts) readGPU(fsys FS, name string, g *driverGPU) error {
	pci, ok := parsePCI(name)
	if !ok {
		return errors.New(driverDir + "/" + name + ": not a PCI address")
	}
	path := driverDir + "/" + name + "/information"
	var err error
	if f.buf, err = fsys.AppendFile(f.buf[:0], path); err != nil {
		return err
	}
	if *g, err = parseInformation(f.buf); err != nil {
		return errors.New(path + ": " + err.Error())
	}
	g.pci = pci
	return nil
}

// secondGPU is readDriver's error for a GPU of the directory name whose
// minor or UUID is another's. Its own frame holds the formatting, off the
// task path's (the stack rule: package taskenv).
//
//go:noinline
func secondGPU(name string, g *driverGPU) error {
	return confError(driverDir+"/"+name, ": a second GPU of minor "+strconv.FormatUint(uint64(g.minor), 10), " or UUID "+g.uuid)
}

// readDriver reads every GPU the driver lists.
func (f *nodeFacts) readDriver(fsys FS) ([]driverGPU, error) {
	names, err := fsys.ReadDir(driverDir)
	if err != nil {
		return nil, confError("the NVIDIA driver's GPU list: ", err.Error(), "")
	}
	gpus := f.gpuRoom[:]
	if len(names) > len(gpus) {
		gpus = make([]driverGPU, len(names))
	}
	gpus = gpus[:len(names)]
	for i, name := range names {
		if err := f.readGPU(fsys, name, &gpus[i]); err != nil {
			return nil, err
		}
		for _, other := range gpus[:i] {
			if other.minor == gpus[i].minor || other.uuid == gpus[i].uuid {
				return nil, secondGPU(name, &gpus[i])
			}
		}
	}
	if len(gpus) == 0 {
		return nil, errors.New(driverDir + " lists no GPU")
	}
	// Sorted in PCI order, which is CUDA's (see find).
	for i := 1; i < len(gpus); i++ {
		for j := i; j > 0 && gpus[j].pci < gpus[j-1].pci; j-- {
			gpus[j], gpus[j-1] = gpus[j-1], gpus[j]
		}
	}
	return gpus, nil
}
