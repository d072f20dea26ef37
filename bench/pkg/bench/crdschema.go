package bench

import (
	"fmt"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/gitops-service/gitops-service/pkg/generated/openapi"
)

const (
	refPrefix     = "#/definitions/"
	objectMetaDef = "k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta"
	// GitOpsDeploymentDef is the OpenAPI definition name of the GitOpsDeployment wire type.
	GitOpsDeploymentDef = "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1.GitOpsDeployment"
)

// OpenAPIDefinitions returns the definitions generated for this repository's types, with
// references of the form "#/definitions/<name>".
func OpenAPIDefinitions() map[string]common.OpenAPIDefinition {
	return openapi.GetOpenAPIDefinitions(func(name string) spec.Ref { return spec.MustCreateRef(refPrefix + name) })
}

// SchemaFromOpenAPI converts the OpenAPI definition root (a top-level kind) and everything
// it references into one inlined apiextensions v1 schema, as a CRD needs it: references are
// resolved, the object's metadata is reduced to `type: object` (the apiserver supplies
// ObjectMeta's schema), and what a structural schema may not carry is left out. Defaults are
// left out as well: openapi-gen emits the Go zero value as default for every non-pointer field,
// which is not what the CRD of this API ever declared, and which the apiserver would apply on
// every read.
func SchemaFromOpenAPI(defs map[string]common.OpenAPIDefinition, root string) (*apiextensionsv1.JSONSchemaProps, error) {
	def, ok := defs[root]
	if !ok {
		return nil, fmt.Errorf("no OpenAPI definition %q", root)
	}
	c := converter{defs: defs, visiting: map[string]bool{root: true}}
	out, err := c.convert(def.Schema, root)
	if err != nil {
		return nil, err
	}
	if _, ok := out.Properties["metadata"]; ok {
		out.Properties["metadata"] = apiextensionsv1.JSONSchemaProps{Type: "object"}
	}
	return out, nil
}

type converter struct {
	defs     map[string]common.OpenAPIDefinition
	visiting map[string]bool // definitions on the current path, to refuse recursive types
}

func (c *converter) resolve(s spec.Schema, path string) (*apiextensionsv1.JSONSchemaProps, error) {
	ref := s.Ref.String()
	if ref == "" {
		return c.convert(s, path)
	}
	name := strings.TrimPrefix(ref, refPrefix)
	if name == objectMetaDef {
		return &apiextensionsv1.JSONSchemaProps{Type: "object", Description: s.Description}, nil
	}
	def, ok := c.defs[name]
	if !ok {
		return nil, fmt.Errorf("%s: reference to unknown definition %q", path, name)
	}
	if c.visiting[name] {
		return nil, fmt.Errorf("%s: recursive reference to %q cannot be inlined into a CRD schema", path, name)
	}
	c.visiting[name] = true
	defer delete(c.visiting, name)
	out, err := c.convert(def.Schema, path)
	if err != nil {
		return nil, err
	}
	if s.Description != "" { // the field's own description wins over its type's
		out.Description = s.Description
	}
	return out, nil
}

func (c *converter) convert(s spec.Schema, path string) (*apiextensionsv1.JSONSchemaProps, error) {
	if len(s.AllOf) > 0 || len(s.AnyOf) > 0 || len(s.OneOf) > 0 || s.Not != nil {
		return nil, fmt.Errorf("%s: allOf/anyOf/oneOf/not are not supported", path)
	}
	out := &apiextensionsv1.JSONSchemaProps{
		Description: s.Description,
		Format:      s.Format,
		Required:    append([]string(nil), s.Required...),
		Pattern:     s.Pattern,
		MaxLength:   s.MaxLength,
		MinLength:   s.MinLength,
		MaxItems:    s.MaxItems,
		MinItems:    s.MinItems,
		Maximum:     s.Maximum,
		Minimum:     s.Minimum,
	}
	switch len(s.Type) {
	case 0:
		if s.Format == "int-or-string" {
			out.XIntOrString = true
			out.Format = ""
			break
		}
		if len(s.Properties) > 0 || s.AdditionalProperties != nil {
			out.Type = "object"
			break
		}
		// An untyped value (a runtime.RawExtension, for example): keep whatever it holds.
		out.XPreserveUnknownFields = ptr(true)
	case 1:
		out.Type = s.Type[0]
	default:
		return nil, fmt.Errorf("%s: more than one type %v", path, s.Type)
	}
	for _, e := range s.Enum {
		raw, err := jsonValue(e)
		if err != nil {
			return nil, fmt.Errorf("%s: enum: %w", path, err)
		}
		out.Enum = append(out.Enum, raw)
	}
	if len(s.Properties) > 0 {
		out.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
		names := make([]string, 0, len(s.Properties))
		for name := range s.Properties {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			p, err := c.resolve(s.Properties[name], path+"."+name)
			if err != nil {
				return nil, err
			}
			out.Properties[name] = *p
		}
	}
	if ap := s.AdditionalProperties; ap != nil {
		if ap.Schema != nil {
			p, err := c.resolve(*ap.Schema, path+"[*]")
			if err != nil {
				return nil, err
			}
			out.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: p}
		} else if ap.Allows {
			out.XPreserveUnknownFields = ptr(true)
		}
	}
	if s.Items != nil {
		if s.Items.Schema == nil || len(s.Items.Schemas) > 0 {
			return nil, fmt.Errorf("%s: tuple items are not supported", path)
		}
		p, err := c.resolve(*s.Items.Schema, path+"[]")
		if err != nil {
			return nil, err
		}
		out.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: p}
	}
	for key, v := range s.Extensions {
		switch strings.ToLower(key) {
		case "x-kubernetes-list-type":
			if str, ok := v.(string); ok {
				out.XListType = ptr(str)
			}
		case "x-kubernetes-map-type":
			if str, ok := v.(string); ok {
				out.XMapType = ptr(str)
			}
		case "x-kubernetes-list-map-keys":
			keys, ok := v.([]interface{})
			if !ok {
				return nil, fmt.Errorf("%s: x-kubernetes-list-map-keys is %T", path, v)
			}
			for _, k := range keys {
				out.XListMapKeys = append(out.XListMapKeys, fmt.Sprint(k))
			}
		case "x-kubernetes-preserve-unknown-fields":
			if b, ok := v.(bool); ok && b {
				out.XPreserveUnknownFields = ptr(true)
			}
		case "x-kubernetes-int-or-string":
			if b, ok := v.(bool); ok && b {
				out.XIntOrString = true
			}
		case "x-kubernetes-embedded-resource":
			if b, ok := v.(bool); ok && b {
				out.XEmbeddedResource = true
			}
		}
		// x-kubernetes-patch-strategy and -merge-key are for strategic merge patch, which
		// custom resources do not support; they are dropped.
	}
	return out, nil
}

func jsonValue(v interface{}) (apiextensionsv1.JSON, error) {
	switch t := v.(type) {
	case string:
		return apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf("%q", t))}, nil
	case bool, int, int32, int64, float64:
		return apiextensionsv1.JSON{Raw: []byte(fmt.Sprint(t))}, nil
	}
	return apiextensionsv1.JSON{}, fmt.Errorf("unsupported enum value %T", v)
}

func ptr[T any](v T) *T { return &v }

// GitOpsDeploymentCRD returns the GitOpsDeployment kind as a CustomResourceDefinition of group:
// plural gitopsdeployments, version v1alpha1, the schema generated from our OpenAPI
// definitions, the status subresource and the printer columns of the original CRD.
func GitOpsDeploymentCRD(group string) (*apiextensionsv1.CustomResourceDefinition, error) {
	schema, err := SchemaFromOpenAPI(OpenAPIDefinitions(), GitOpsDeploymentDef)
	if err != nil {
		return nil, err
	}
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "gitopsdeployments." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural:   "gitopsdeployments",
				Singular: "gitopsdeployment",
				Kind:     "GitOpsDeployment",
				ListKind: "GitOpsDeploymentList",
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name:    "v1alpha1",
				Served:  true,
				Storage: true,
				Schema:  &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema},
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
				},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "Sync Status", Type: "string", JSONPath: ".status.sync.status"},
					{Name: "Health Status", Type: "string", JSONPath: ".status.health.status"},
				},
			}},
		},
	}, nil
}
