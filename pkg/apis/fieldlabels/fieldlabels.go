// Package fieldlabels registers which fields of a kind field selectors may use.
package fieldlabels

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Register accepts metadata.name, metadata.namespace and the given fields of every kind of gv
// in field selectors, and rejects any other field with an error that lists the supported ones.
func Register(scheme *runtime.Scheme, gv schema.GroupVersion, selectable map[string][]string) error {
	for kind, extra := range selectable {
		allowed := sets.New(extra...).Insert("metadata.name", "metadata.namespace")
		err := scheme.AddFieldLabelConversionFunc(gv.WithKind(kind), func(label, value string) (string, string, error) {
			if !allowed.Has(label) {
				return "", "", fmt.Errorf("field label not supported: %s (supported: %v)", label, sets.List(allowed))
			}
			return label, value, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
