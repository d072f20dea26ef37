// Package docs checks the documentation against the repository: the README's Layout section
// describes the tree as it is, and every relative link resolves.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const root = "../.."

// layoutPaths are the paths that begin the lines of the README's Layout block.
func layoutPaths(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := regexp.MustCompile("(?s)\n## Layout\n.*?```\n(.*?)```").FindSubmatch(readme)
	if section == nil {
		t.Fatal("README.md has no ## Layout section with a code block")
	}
	var paths []string
	for _, line := range strings.Split(string(section[1]), "\n") {
		if line == "" || strings.HasPrefix(line, " ") {
			continue
		}
		paths = append(paths, strings.TrimSuffix(strings.Fields(line)[0], "/"))
	}
	return paths
}

func TestLayoutPathsExist(t *testing.T) {
	for _, p := range layoutPaths(t) {
		if strings.Contains(p, "<") {
			p = p[:strings.Index(p, "<")]
		}
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("README.md's Layout names %s, which does not exist", p)
		}
	}
}

func TestEveryTopLevelFolderInLayout(t *testing.T) {
	listed := map[string]bool{}
	for _, p := range layoutPaths(t) {
		listed[strings.SplitN(p, "/", 2)[0]] = true
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		// bin/ holds what the scripts build; it is git-ignored.
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || e.Name() == "bin" {
			continue
		}
		if !listed[e.Name()] {
			t.Errorf("the folder %s/ is missing from README.md's Layout", e.Name())
		}
	}
}
