package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	link    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#{1,6} +(.+)$`)
	htmlID  = regexp.MustCompile(`<a (?:id|name)="([^"]+)"`)
	fence   = regexp.MustCompile("(?ms)^```.*?^```")
)

// anchors are the fragment names GitHub gives the headings of a Markdown file (lower case,
// punctuation other than '-' and '_' dropped, spaces as '-') and its HTML anchors.
func anchors(markdown string) map[string]bool {
	out := map[string]bool{}
	for _, m := range htmlID.FindAllStringSubmatch(markdown, -1) {
		out[m[1]] = true
	}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(markdown, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(m[1])) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}

// TestDocumentationLinksResolve follows every relative link of the README and docs/: the file
// must exist and, for a Markdown file, so must the heading a fragment names.
func TestDocumentationLinksResolve(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	reference, err := filepath.Glob(filepath.Join(root, "docs", "reference", "*.md"))
	files = append(files, reference...)
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"), filepath.Join(root, "CHANGELOG.md"))
	anchorsOf := map[string]map[string]bool{} // a file's anchors, computed once
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := fence.ReplaceAllString(string(data), "")
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, fragment, _ := strings.Cut(target, "#")
			resolved := file
			if path != "" {
				resolved = filepath.Join(filepath.Dir(file), path)
			}
			content, err := os.ReadFile(resolved)
			if err != nil {
				if info, statErr := os.Stat(resolved); statErr == nil && info.IsDir() {
					continue
				}
				t.Errorf("%s links to %s, which does not exist", file, target)
				continue
			}
			if anchorsOf[resolved] == nil {
				anchorsOf[resolved] = anchors(string(content))
			}
			if fragment != "" && strings.HasSuffix(resolved, ".md") && !anchorsOf[resolved][fragment] {
				t.Errorf("%s links to %s, whose heading #%s does not exist", file, target, fragment)
			}
		}
	}
}
