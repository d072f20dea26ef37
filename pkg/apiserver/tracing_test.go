package apiserver

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	genericfeatures "k8s.io/apiserver/pkg/features"

	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// TestTracingFilterOnlyWithATracingConfiguration checks that the handler chain traces requests
// when a tracing configuration is given, and leaves the filter out when none is.
func TestTracingFilterOnlyWithATracingConfiguration(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	tracingConfig := filepath.Join(t.TempDir(), "tracing.yaml")
	if err := os.WriteFile(tracingConfig, []byte(`apiVersion: apiserver.config.k8s.io/v1beta1
kind: TracingConfiguration
endpoint: 127.0.0.1:4317
samplingRatePerMillion: 0
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		configFile string
		want       bool
	}{{"", false}, {tracingConfig, true}} {
		o := testOptions(t, dsn)
		o.RecommendedOptions.Traces.ConfigFile = tc.configFile
		config, cleanup, err := o.Config(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		cleanup()
		gate := config.GenericConfig.FeatureGate
		if got := gate.Enabled(genericfeatures.APIServerTracing); got != tc.want {
			t.Errorf("tracing config %q: tracing filter %v, want %v", tc.configFile, got, tc.want)
		}
		if !gate.Enabled(genericfeatures.APIResponseCompression) {
			t.Errorf("tracing config %q: other features changed", tc.configFile)
		}
	}
}
