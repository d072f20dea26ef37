package cli

import (
	"os"
	"regexp"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestKrewManifest checks artifacts/krew/gitops.yaml as krew-release-bot renders it: a Plugin
// named gitops whose every platform runs the binary this package builds.
func TestKrewManifest(t *testing.T) {
	raw, err := os.ReadFile("../../artifacts/krew/gitops.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rendered := regexp.MustCompile(`\{\{ addURIAndSha "([^"]*)" \.TagName \}\}`).ReplaceAllString(string(raw),
		"uri: $1\n      sha256: 0000000000000000000000000000000000000000000000000000000000000000")
	rendered = regexp.MustCompile(`\{\{ \.TagName \}\}`).ReplaceAllString(rendered, "v0.1.0")
	var plugin struct {
		APIVersion, Kind string
		Metadata         struct{ Name string }
		Spec             struct {
			Version, ShortDescription, Description, Caveats, Homepage string
			Platforms                                                 []struct {
				Selector         struct{ MatchLabels map[string]string }
				URI, Sha256, Bin string
			}
		}
	}
	if err := yaml.UnmarshalStrict([]byte(rendered), &plugin); err != nil {
		t.Fatalf("%v\n%s", err, rendered)
	}
	if plugin.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || plugin.Kind != "Plugin" || plugin.Metadata.Name != "gitops" ||
		plugin.Spec.Version != "v0.1.0" || plugin.Spec.ShortDescription == "" || len(plugin.Spec.Platforms) == 0 {
		t.Fatalf("not a krew Plugin named gitops: %+v", plugin)
	}
	for _, p := range plugin.Spec.Platforms {
		os, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		want := "kubectl-gitops"
		if os == "windows" {
			want += ".exe"
		}
		if p.Bin != want || p.URI != "https://github.com/gitops-service/gitops-service/releases/download/v0.1.0/kubectl-gitops_"+os+"_"+arch+".tar.gz" {
			t.Errorf("platform %s/%s: bin %q, uri %q", os, arch, p.Bin, p.URI)
		}
	}
}
