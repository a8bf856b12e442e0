package device

import (
	"maps"
	"strings"
	"testing"
)

// A variant of -variants is a macro set: "default" and empty items are
// none; an item without "=" or a name is refused with the variant named.
func TestDefinesParsesAMacroSetAndRefusesAnItemWithoutAName(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string
	}{
		{"", map[string]string{}},
		{"default", map[string]string{}},
		{" WBITS=13 , SPLIT=", map[string]string{"WBITS": "13", "SPLIT": ""}},
		{"default,affine=64,", map[string]string{"affine": "64"}},
	} {
		got, err := Defines(tc.in)
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("Defines(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"WBITS", "A=1,=2"} {
		if _, err := Defines(in); err == nil || !strings.Contains(err.Error(), in) {
			t.Errorf("Defines(%q): error %v, want one naming the variant", in, err)
		}
	}
}
