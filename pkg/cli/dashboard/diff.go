package dashboard

import (
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// Diff is what /api/diff answers: the API's diff of two records of a deployment, with each
// field's values as the JSON text the page shows. Secrets' values are the redaction markers
// the API returns; the dashboard never sees more.
type Diff struct {
	Deployment string         `json:"deployment"`
	From       string         `json:"from"`
	To         string         `json:"to"`
	FromDigest string         `json:"fromDigest,omitempty"`
	ToDigest   string         `json:"toDigest,omitempty"`
	Resources  []ResourceDiff `json:"resources"`
	Truncated  bool           `json:"truncated,omitempty"`
}

// ResourceDiff is one resource added, removed or modified.
type ResourceDiff struct {
	Group     string      `json:"group,omitempty"`
	Kind      string      `json:"kind"`
	Namespace string      `json:"namespace,omitempty"`
	Name      string      `json:"name"`
	Change    string      `json:"change"`
	Fields    []FieldDiff `json:"fields"`
}

// FieldDiff is a field that differs; From or To is nil on the side without the field.
type FieldDiff struct {
	Path string  `json:"path"`
	From *string `json:"from"`
	To   *string `json:"to"`
}

func diffView(deployment string, d *managedv1alpha1.DeploymentRecordDiff) *Diff {
	out := &Diff{Deployment: deployment, From: d.From, To: d.To, FromDigest: d.FromDigest, ToDigest: d.ToDigest,
		Resources: []ResourceDiff{}, Truncated: d.Truncated}
	for _, r := range d.Resources {
		rd := ResourceDiff{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Change: string(r.Change), Fields: []FieldDiff{}}
		for _, f := range r.Fields {
			rd.Fields = append(rd.Fields, FieldDiff{Path: f.Path, From: rawText(f.From), To: rawText(f.To)})
		}
		out.Resources = append(out.Resources, rd)
	}
	return out
}

// rawText is a field's JSON value as text; nil for a side without one.
func rawText(v *runtime.RawExtension) *string {
	if v == nil || len(v.Raw) == 0 || string(v.Raw) == "null" {
		return nil
	}
	s := string(v.Raw)
	return &s
}

// diff answers the diff of two records of a deployment. It is a GET: it changes nothing
// (the API's subresource is a create only because it takes a body).
func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	deployment, from, to := q.Get("deployment"), q.Get("from"), q.Get("to")
	if deployment == "" || from == "" || to == "" || s.cfg.Diff == nil {
		writeJSON(w, http.StatusBadRequest, result{Error: "name the GitOpsDeployment and the two DeploymentRecords to compare (from, to)"})
		return
	}
	d, err := s.cfg.Diff(r.Context(), deployment, from, to)
	if err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, result{Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, diffView(deployment, d))
}
