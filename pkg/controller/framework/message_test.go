package framework

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncateMessage(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"0123456789abc", 10, "0123456789…"},
		// "é" is two bytes, at bytes 9 and 10: the cut moves before it.
		{"012345678é9", 10, "012345678…"},
		// "€" is three bytes at 8, 9, 10.
		{"01234567€", 9, "01234567…"},
	} {
		got := TruncateMessage(tc.s, tc.n)
		if got != tc.want {
			t.Errorf("TruncateMessage(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("TruncateMessage(%q, %d) = %q is not valid UTF-8", tc.s, tc.n, got)
		}
	}
}

// A message cut at every possible length survives a JSON round trip unchanged, as a status
// written through the API must.
func TestTruncateMessageSurvivesJSON(t *testing.T) {
	s := strings.Repeat("Deployment «web» 部署 ✓ ", 20)
	for n := 0; n < len(s); n++ {
		cut := TruncateMessage(s, n)
		raw, err := json.Marshal(cut)
		if err != nil {
			t.Fatal(err)
		}
		var back string
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if back != cut {
			t.Fatalf("cut at %d: %q came back as %q", n, cut, back)
		}
	}
}
