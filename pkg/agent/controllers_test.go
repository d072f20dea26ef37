package agent

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestEnabledControllers(t *testing.T) {
	for _, tc := range []struct {
		list    []string
		want    []string
		wantErr string
	}{
		{list: []string{"*"}, want: KnownControllers},
		{list: []string{"*", "-argocd"}, want: []string{"environment", "promotionrun", "snapshotenvironmentbinding"}},
		{list: []string{"argocd"}, want: []string{"argocd"}},
		{list: []string{"-argocd", "*"}, want: []string{"environment", "promotionrun", "snapshotenvironmentbinding"}},
		{list: []string{"promotionrun", "environment"}, want: []string{"environment", "promotionrun"}},
		{list: []string{"*", "-argocd", "-environment", "-snapshotenvironmentbinding", "-promotionrun"}, wantErr: "enables no controller"},
		{list: []string{"-argocd"}, wantErr: "enables no controller"},
		{list: nil, wantErr: "enables no controller"},
		{list: []string{"*", "deployment"}, wantErr: `unknown controller "deployment"; known: argocd, environment`},
		{list: []string{"-foo"}, wantErr: `unknown controller "-foo"`},
		{list: []string{"argocd", "-argocd"}, wantErr: `controller "argocd" is both enabled and disabled`},
	} {
		t.Run(strings.Join(tc.list, ","), func(t *testing.T) {
			got, err := EnabledControllers(tc.list)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			names := slices.Sorted(maps.Keys(got))
			if want := slices.Sorted(slices.Values(tc.want)); !slices.Equal(names, want) {
				t.Errorf("enabled %v, want %v", names, want)
			}
		})
	}
}
