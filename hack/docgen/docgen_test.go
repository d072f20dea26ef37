package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsCurrent fails when a committed reference file differs from what make docs writes now,
// as it does after a flag, its help or default, or an API type's field or comment changes.
func TestDocsCurrent(t *testing.T) {
	root, err := repositoryRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		want, err := d.generate(root)
		if err != nil {
			t.Fatalf("%s: %v", d.path, err)
		}
		got, err := os.ReadFile(filepath.Join(root, d.path))
		if err != nil {
			t.Errorf("%s: %v: run make docs", d.path, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is out of date: run make docs\n%s", d.path, firstDifference(string(got), string(want)))
		}
	}
}

// TestDocsDeterministic guards the ordering: a map ranged over unsorted would make the files
// differ from one run to the next, and TestDocsCurrent flaky.
func TestDocsDeterministic(t *testing.T) {
	root, err := repositoryRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		first, err := d.generate(root)
		if err != nil {
			t.Fatalf("%s: %v", d.path, err)
		}
		second, err := d.generate(root)
		if err != nil {
			t.Fatalf("%s: %v", d.path, err)
		}
		if !bytes.Equal(first, second) {
			t.Errorf("%s: two runs of the generator differ\n%s", d.path, firstDifference(string(first), string(second)))
		}
	}
}

// firstDifference names the first line on which the committed text and the generated one
// differ, to point at the cause without a diff tool.
func firstDifference(committed, generated string) string {
	c, g := strings.Split(committed, "\n"), strings.Split(generated, "\n")
	for i := 0; i < len(c) || i < len(g); i++ {
		var cl, gl string
		if i < len(c) {
			cl = c[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if cl != gl || i >= len(c) || i >= len(g) {
			return fmt.Sprintf("first difference, line %d:\ncommitted: %s\ngenerated: %s", i+1, cl, gl)
		}
	}
	return ""
}
