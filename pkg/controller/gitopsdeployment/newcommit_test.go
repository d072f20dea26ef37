package gitopsdeployment

import (
	"errors"
	"strings"
	"testing"
)

func TestDecideNewCommit(t *testing.T) {
	const (
		v2 = "2222222222222222222222222222222222222222"
		v3 = "3333333333333333333333333333333333333333"
	)
	tests := []struct {
		name             string
		base, target     string
		canResolve       bool
		resolved         string
		err              error
		want             newCommitAction
		wantBase, inNote string
	}{
		{"no base yet: record it", "", "main", true, v2, nil, newCommitRecordBase, v2, "released when main moves past " + v2},
		{"same commit: keep", v2, "main", true, v2, nil, newCommitKeep, v2, "moves past " + v2},
		{"another commit: release", v2, "main", true, v3, nil, newCommitRelease, v2, v3},
		{"resolve error: keep, say why", v2, "main", true, "", errors.New("connection refused"), newCommitKeep, v2, "cannot resolve main (kept until it can): connection refused"},
		{"resolve error before a base: no base", "", "main", true, "", errors.New("boom"), newCommitKeep, "", "cannot resolve main"},
		{"empty answer: keep", v2, "main", true, "", nil, newCommitKeep, v2, "returned no commit"},
		{"targetRevision a SHA: never newer", "", v2, true, "", nil, newCommitKeep, "", "no newer commit can arrive there"},
		{"targetRevision a SHA-256: never newer", "", strings.Repeat("a", 64), true, "", nil, newCommitKeep, "", "no newer commit can arrive there"},
		{"no repo-server: keep, say why", "", "main", false, "", nil, newCommitKeep, "", "no --repo-server"},
		{"empty targetRevision is HEAD", "", "", true, v2, nil, newCommitRecordBase, v2, "HEAD moves past"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideNewCommit(tt.base, tt.target, tt.canResolve, tt.resolved, tt.err)
			if got.Action != tt.want || got.Base != tt.wantBase || !strings.Contains(got.Note, tt.inNote) {
				t.Errorf("got %+v, want action %d base %q note containing %q", got, tt.want, tt.wantBase, tt.inNote)
			}
		})
	}
}
