// Package fieldvalidation holds the field checks that both API groups share: URLs, object
// references and namespace lists.
package fieldvalidation

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// HTTPSURL checks that value is an absolute https URL with a host. Query strings are refused
// when noQuery is set: the service appends its own query parameter to cluster URLs.
func HTTPSURL(fldPath *field.Path, value string, noQuery bool) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "must be an https:// URL")}
	}
	u, err := url.ParseRequestURI(value)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, value, "must be an absolute https:// URL: "+err.Error())}
	}
	var errs field.ErrorList
	if u.Scheme != "https" {
		errs = append(errs, field.Invalid(fldPath, value, "must start with https://"))
	}
	if u.Host == "" {
		errs = append(errs, field.Invalid(fldPath, value, "must have a host"))
	}
	// ParseRequestURI never splits off a fragment (it leaves '#' in the path), so look for it in
	// the text.
	if noQuery && strings.ContainsAny(value, "?&#") {
		errs = append(errs, field.Invalid(fldPath, value, "must not have a query ('?' or '&') or a fragment"))
	}
	return errs
}

// scpLikeGitURL matches the scp-like SSH syntax Git accepts, such as git@github.com:org/repo.git.
var scpLikeGitURL = regexp.MustCompile(`^[A-Za-z0-9._~-]+@[A-Za-z0-9.-]+:[^/\\].*$`)

// GitRepositoryURL checks that value is a URL Git can clone with the given schemes, or an
// scp-like SSH address when allowSCP is set.
func GitRepositoryURL(fldPath *field.Path, value string, schemes []string, allowSCP bool) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	supported := describeSchemes(schemes, allowSCP)
	if allowSCP && scpLikeGitURL.MatchString(value) {
		return nil
	}
	u, err := url.ParseRequestURI(value)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, value, "must be "+supported)}
	}
	if !sets.New(schemes...).Has(u.Scheme) {
		return field.ErrorList{field.Invalid(fldPath, value, "must be "+supported)}
	}
	if u.Scheme != "file" && u.Host == "" {
		return field.ErrorList{field.Invalid(fldPath, value, "must have a host")}
	}
	if u.Scheme == "file" && u.Path == "" {
		return field.ErrorList{field.Invalid(fldPath, value, "must have a path")}
	}
	return nil
}

func describeSchemes(schemes []string, allowSCP bool) string {
	parts := make([]string, 0, len(schemes)+1)
	for _, s := range schemes {
		parts = append(parts, s+"://")
	}
	desc := "a URL starting with " + strings.Join(parts, ", ")
	if allowSCP {
		desc += ", or an scp-like SSH address such as git@github.com:org/repo"
	}
	return desc
}

// ObjectName checks a reference to an object of the same namespace. Empty is refused when required.
func ObjectName(fldPath *field.Path, value string, required bool) field.ErrorList {
	if value == "" {
		if required {
			return field.ErrorList{field.Required(fldPath, "")}
		}
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.NameIsDNSSubdomain(value, false) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

// NamespaceName checks a namespace name. Empty is refused when required.
func NamespaceName(fldPath *field.Path, value string, required bool) field.ErrorList {
	return DNSLabel(fldPath, value, required)
}

// DNSLabel checks a DNS-1123 label: a namespace's name, or a name that goes into label values
// and other objects' names. Empty is refused when required.
func DNSLabel(fldPath *field.Path, value string, required bool) field.ErrorList {
	if value == "" {
		if required {
			return field.ErrorList{field.Required(fldPath, "")}
		}
		return nil
	}
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Label(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

// NamespaceList checks that every entry is a namespace name and none repeats.
func NamespaceList(fldPath *field.Path, values []string) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, ns := range values {
		idx := fldPath.Index(i)
		errs = append(errs, NamespaceName(idx, ns, true)...)
		if seen.Has(ns) {
			errs = append(errs, field.Duplicate(idx, ns))
		}
		seen.Insert(ns)
	}
	return errs
}

// Enum checks that value is one of allowed. Empty is refused when required.
func Enum[T ~string](fldPath *field.Path, value T, required bool, allowed ...T) field.ErrorList {
	if value == "" {
		if required {
			return field.ErrorList{field.Required(fldPath, fmt.Sprintf("must be one of %s", quoted(allowed)))}
		}
		return nil
	}
	for _, a := range allowed {
		if value == a {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(fldPath, value, allowed)}
}

func quoted[T ~string](values []T) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = fmt.Sprintf("%q", string(v))
	}
	return strings.Join(parts, ", ")
}

// ConditionStatus checks the status of a custom condition type.
func ConditionStatus[T ~string](fldPath *field.Path, value T) field.ErrorList {
	return Enum(fldPath, value, true, T("True"), T("False"), T("Unknown"))
}
