package libcarrier_test

import (
	"maps"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/spank-otel/spank-otel/libcarrier"
)

func TestCompose(t *testing.T) {
	tests := []struct {
		name                        string
		current, defaults, override map[string]any
		want                        map[string]any
	}{
		{name: "all nil", want: map[string]any{}},
		{name: "defaults fill gaps",
			current:  map[string]any{"a": "cur"},
			defaults: map[string]any{"a": "def", "b": "def"},
			want:     map[string]any{"a": "cur", "b": "def"}},
		{name: "overrides beat current",
			current:  map[string]any{"a": "cur", "b": "cur"},
			override: map[string]any{"a": "over"},
			want:     map[string]any{"a": "over", "b": "cur"}},
		{name: "overrides beat defaults",
			defaults: map[string]any{"a": "def"},
			override: map[string]any{"a": 7},
			want:     map[string]any{"a": 7}},
		{name: "empty current value beats default",
			current:  map[string]any{"a": ""},
			defaults: map[string]any{"a": "def"},
			want:     map[string]any{"a": ""}},
		{name: "empty override beats current",
			current:  map[string]any{"a": "cur"},
			override: map[string]any{"a": ""},
			want:     map[string]any{"a": ""}},
		{name: "nil override removes the key",
			current:  map[string]any{"a": "cur", "b": "cur"},
			defaults: map[string]any{"a": "def"},
			override: map[string]any{"a": nil},
			want:     map[string]any{"b": "cur"}},
		{name: "nil current removes the default",
			current:  map[string]any{"a": nil},
			defaults: map[string]any{"a": "def"},
			want:     map[string]any{}},
		{name: "nil default is not kept",
			defaults: map[string]any{"a": nil, "b": 1},
			want:     map[string]any{"b": 1}},
		{name: "later value replaces an earlier nil",
			current:  map[string]any{"a": nil},
			override: map[string]any{"a": false},
			want:     map[string]any{"a": false}},
		{name: "keys compared after trimming",
			current:  map[string]any{"k": "cur", "j": "cur"},
			override: map[string]any{" k": "over", "j\t": nil},
			want:     map[string]any{"k": "over"}},
		{name: "spellings in one layer: last sorted wins",
			current: map[string]any{"k": "plain", " k": "lead", "k ": "trail"},
			want:    map[string]any{"k": "trail"}},
		{name: "spellings in one layer: exact spelling sorting last wins",
			current: map[string]any{"k": "plain", " k": "lead", "\tk": "tab"},
			want:    map[string]any{"k": "plain"}},
		{name: "values are not converted",
			current: map[string]any{"a": struct{}{}, "b": 1.5},
			want:    map[string]any{"a": struct{}{}, "b": 1.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := []map[string]any{maps.Clone(tt.current), maps.Clone(tt.defaults), maps.Clone(tt.override)}
			got := libcarrier.Compose(tt.current, tt.defaults, tt.override)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Compose = %v, want %v", got, tt.want)
			}
			after := []map[string]any{tt.current, tt.defaults, tt.override}
			if !reflect.DeepEqual(before, after) {
				t.Errorf("Compose modified its inputs: before %v, after %v", before, after)
			}
		})
	}
}

func TestComposeReturnsNewMap(t *testing.T) {
	cur := map[string]any{"a": "1"}
	got := libcarrier.Compose(cur, nil, nil)
	got["a"] = "changed"
	got["b"] = "new"
	if !reflect.DeepEqual(cur, map[string]any{"a": "1"}) {
		t.Errorf("changing the result changed the input: %v", cur)
	}
}

func TestExtend(t *testing.T) {
	tests := []struct {
		name               string
		text               string
		defaults, override map[string]any
		want               string
		warns              []string
	}{
		{name: "empty everything", want: ""},
		{name: "canonicalises the text", text: " b = x y , a=1 ", want: "a=1,b=x%20y"},
		{name: "defaults fill gaps",
			text:     "a=cur",
			defaults: map[string]any{"a": "def", "b": 2},
			want:     "a=cur,b=2"},
		{name: "overrides win",
			text:     "a=cur,b=cur",
			override: map[string]any{"a": "over", "c": true},
			want:     "a=over,b=cur,c=true"},
		{name: "nil override removes an inherited key",
			text:     "a=cur,b=cur",
			override: map[string]any{"b": nil},
			want:     "a=cur"},
		{name: "blank-padded override replaces parsed key",
			text:     "k=cur",
			override: map[string]any{"k ": "over"},
			want:     "k=over"},
		{name: "decoded values re-encoded",
			text: "a=%2C%3D+%zz",
			want: "a=%2C%3D%2B%25zz"},
		{name: "parse warnings then format warnings",
			text:     "junk,a=%FF",
			override: map[string]any{"b": struct{}{}},
			want:     "",
			warns: []string{
				`entry "junk" has no '=': dropped`,
				`key "a": value is not valid UTF-8: dropped`,
				`key "b": value of type struct {} is not supported: dropped`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warns := libcarrier.Extend(tt.text, tt.defaults, tt.override)
			if got != tt.want {
				t.Errorf("Extend(%q) = %q, want %q", tt.text, got, tt.want)
			}
			if gotW := warningStrings(warns); !slices.Equal(gotW, tt.warns) {
				t.Errorf("Extend(%q) warnings:\n got %q\nwant %q", tt.text, gotW, tt.warns)
			}
		})
	}
}

// TestExtendIsPure checks that Extend neither reads nor writes the
// environment.
func TestExtendIsPure(t *testing.T) {
	t.Setenv(libcarrier.EnvVar, "from.env=1")
	got, _ := libcarrier.Extend("a=1", nil, map[string]any{"b": 2})
	if got != "a=1,b=2" {
		t.Errorf("Extend = %q, want %q", got, "a=1,b=2")
	}
	if v := os.Getenv(libcarrier.EnvVar); v != "from.env=1" {
		t.Errorf("Extend changed the environment to %q", v)
	}
}
