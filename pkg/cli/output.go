package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// treeOutput is -o of the commands that print trees: the tree (default), with details (wide),
// or the same as JSON or YAML (Tree) for scripts.
type treeOutput struct{ format string }

func (t *treeOutput) addFlag(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&t.format, "output", "o", "", "Output format: one of (wide, json, yaml). Default: the tree.")
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"wide", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp
	})
}

func (t *treeOutput) validate() error {
	switch t.format {
	case "", "wide", "json", "yaml":
		return nil
	}
	return errorf("--output %q is not supported: use wide, json or yaml", t.format)
}

// structured tells whether the output is for a program: then nothing but the document is printed.
func (t *treeOutput) structured() bool { return t.format == "json" || t.format == "yaml" }

func (t *treeOutput) print(w io.Writer, tree *Tree) error {
	if tree.Items == nil {
		tree.Items = []*Node{}
	}
	switch t.format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "    ")
		return enc.Encode(tree)
	case "yaml":
		raw, err := yaml.Marshal(tree)
		if err != nil {
			return err
		}
		_, err = w.Write(raw)
		return err
	}
	render(w, tree.Items, t.format == "wide")
	return nil
}

// fprintf writes to a stream the user reads; a failed write to a terminal is no error to report.
func fprintf(w io.Writer, format string, args ...interface{}) {
	_, _ = fmt.Fprintf(w, format, args...)
}
