package gpu

import (
	"strings"
	"testing"
)

func TestHostlistEach(t *testing.T) {
	tests := []struct {
		in   string
		want string // names joined with spaces, or "error: …"
	}{
		{"/dev/nvidia0", "/dev/nvidia0"},
		{"/dev/nvidia[0-3]", "/dev/nvidia0 /dev/nvidia1 /dev/nvidia2 /dev/nvidia3"},
		{"/dev/nvidia[1,0,2-3]", "/dev/nvidia1 /dev/nvidia0 /dev/nvidia2 /dev/nvidia3"},
		{"/dev/nvidia1,/dev/nvidia0", "/dev/nvidia1 /dev/nvidia0"},
		{"/dev/nvidia[8-10],/dev/nvidia2", "/dev/nvidia8 /dev/nvidia9 /dev/nvidia10 /dev/nvidia2"},
		{"n[08-10]x", "n08x n09x n10x"},
		{"/dev/nvidia[3-0]", "error: a bad range: 3-0"},
		{"/dev/nvidia[0-3", "error: an unmatched '['"},
		{"/dev/nvidia0]", "error: an unmatched ']'"},
		{"/dev/nvidia[a-b]", "error: a range that is not decimal: a-b"},
		{"n[1-2]r[1-2]", "error: more than one bracket in a name"},
		{"n[]", "error: empty brackets"},
		{"n[0-99999]", "error: a range of more than 4096 names"},
	}
	for _, tt := range tests {
		var names []string
		err := hostlistEach(tt.in, func(s string) { names = append(names, s) })
		got := strings.Join(names, " ")
		if err != nil {
			got = "error: " + err.Error()
		}
		if got != tt.want {
			t.Errorf("hostlistEach(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestHostlistHas(t *testing.T) {
	tests := []struct {
		list, name string
		want       bool
	}{
		{"n1", "n1", true},
		{"n1", "n10", false},
		{"n[1-4]", "n3", true},
		{"n[1-4]", "n5", false},
		{"n[01-10]", "n05", true},
		{"n[01-10]", "n5", false},
		{"n[01-10]", "n10", true},
		{"a,n[1-2],b", "b", true},
		{"gpu[1-2]-ib", "gpu2-ib", true},
		{"gpu[1-2]-ib", "gpu2", false},
		{"ALL", "anything", true},
	}
	for _, tt := range tests {
		got, err := hostlistHas(tt.list, tt.name)
		if err != nil || got != tt.want {
			t.Errorf("hostlistHas(%q, %q) = %v, %v; want %v", tt.list, tt.name, got, err, tt.want)
		}
	}
}

func TestParseGresConf(t *testing.T) {
	tests := []struct {
		name, text string
		want       string // auto and files, or "error: …"
	}{
		{"empty", "", "off:"},
		{"one range", "Name=gpu Type=h100 File=/dev/nvidia[0-1] Cores=0-7\n", "off:/dev/nvidia0 /dev/nvidia1"},
		{"case of keys", "name=gpu FILE=/dev/nvidia1\nNAME=gpu files=/dev/nvidia0\n", "off:/dev/nvidia1 /dev/nvidia0"},
		{"quoted value", `Name=gpu File="/dev/nvidia0"`, "off:/dev/nvidia0"},
		{"comments and continuation", "# GPUs\nName=gpu \\\n File=/dev/nvidia0 # first\n\n  \nName=gpu File=/dev/nvidia1\\#x\n", "off:/dev/nvidia0 /dev/nvidia1#x"},
		{"other GRES", "Name=mps Count=100 File=/dev/nvidia0\nName=shard Count=8\nName=gpu File=/dev/nvidia0\n", "off:/dev/nvidia0"},
		{"other nodes", "NodeName=n2 Name=gpu File=/dev/nvidia[0-7]\nNodeName=n[1,3] Name=gpu File=/dev/nvidia[0-1]\n", "off:/dev/nvidia0 /dev/nvidia1"},
		{"global AutoDetect", "AutoDetect=nvml\n", "nvml:"},
		{"the node's AutoDetect wins", "NodeName=n1 AutoDetect=nvidia\nAutoDetect=off\n", "nvidia:"},
		{"another node's AutoDetect", "NodeName=n2 AutoDetect=nvidia\n", "off:"},
		{"AutoDetect with File-less lines", "AutoDetect=nvml\nName=gpu Type=a100 Count=8\n", "nvml:"},
		{"unterminated quote", `Name=gpu File="/dev/nvidia0`, "error: gres.conf: an unterminated quote after File="},
		{"bad NodeName", "NodeName=n[1 Name=gpu File=/dev/nvidia0\n", "error: gres.conf: NodeName=n[1: an unmatched '['"},
		{"include", "include gres.d/x.conf\n", "error: gres.conf: Include is not supported"},
	}
	for _, tt := range tests {
		conf, err := parseGresConf([]byte(tt.text), "n1")
		got := []string{"off", "nvml", "nvidia"}[conf.auto] + ":" + strings.Join(conf.files, " ")
		if err != nil {
			got = "error: " + err.Error()
		}
		if got != tt.want {
			t.Errorf("%s: parseGresConf = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestParsePCI(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0000:1b:00.0", 0x1b0000, true},
		{"0001:00:1f.7", 1<<24 | 0x1f<<8 | 7, true},
		{"00000000:3B:00.0", 0x3b0000, true},
		{"0000:1b:00", 0, false},
		{"1b:00.0", 0, false},
		{"0000:1g:00.0", 0, false},
		{"0000:+1:00.0", 0, false},
		{"000000000:1b:00.0", 0, false},
	}
	for _, tt := range tests {
		got, ok := parsePCI(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parsePCI(%q) = %#x, %v; want %#x, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
