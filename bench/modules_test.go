package bench

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// replaces are the "old => new" lines of a go.mod's replace block, comments and blank lines
// left out.
func replaces(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?ms)^replace \($(.*?)^\)$`).FindSubmatch(data)
	if block == nil {
		t.Fatalf("%s has no replace block", path)
	}
	var out []string
	for _, line := range strings.Split(string(block[1]), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "//") {
			out = append(out, strings.Join(strings.Fields(line), " "))
		}
	}
	return out
}

// The bench module builds against this repository, and Go does not inherit a dependency's
// replace directives: its go.mod repeats the root's block, which must stay the same, or the
// benchmarks would measure a build of other versions than the product's.
func TestReplaceBlockIsTheRoots(t *testing.T) {
	root, bench := replaces(t, "../go.mod"), replaces(t, "go.mod")
	if !reflect.DeepEqual(root, bench) {
		t.Errorf("bench/go.mod's replace block differs from go.mod's:\n root %q\nbench %q", root, bench)
	}
}
