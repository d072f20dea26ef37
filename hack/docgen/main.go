// Command docgen writes the reference documentation that is generated from the code:
// docs/reference/flags.md from the flag sets of gitops-apiserver and agent, and
// docs/reference/api.md from the OpenAPI definitions of both API groups. make docs runs it
// from the repository's root; docgen_test.go fails when the committed files differ from what
// it writes.
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// docs are the generated files, by path from the repository's root.
var docs = []struct {
	path     string
	generate func(root string) ([]byte, error)
}{
	{"docs/reference/flags.md", flagsDoc},
	{"docs/reference/api.md", apiDoc},
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := repositoryRoot()
	if err != nil {
		return err
	}
	for _, d := range docs {
		b, err := d.generate(root)
		if err != nil {
			return fmt.Errorf("%s: %w", d.path, err)
		}
		path := filepath.Join(root, d.path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// repositoryRoot is the nearest folder holding go.mod, from the working directory up: go run
// and go test start in different folders.
func repositoryRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
