package promotiongate

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
)

func TestRecordKeepsEveryPromotionInProgress(t *testing.T) {
	var status appstudiov1alpha1.PromotionGateStatus
	// Three promotions in progress, then twenty that end.
	for i := range 3 {
		status = Record(status, appstudiov1alpha1.GatedPromotion{PromotionRun: fmt.Sprintf("waiting-%d", i), PromotionRunUID: "u",
			Phase: appstudiov1alpha1.GatePhaseWaiting})
	}
	for i := range 20 {
		status = Record(status, appstudiov1alpha1.GatedPromotion{PromotionRun: fmt.Sprintf("ended-%d", i), PromotionRunUID: "u",
			Phase: appstudiov1alpha1.GatePhasePassed})
	}
	inProgress, ended := 0, 0
	for _, p := range status.Promotions {
		if Final(p.Phase) {
			ended++
		} else {
			inProgress++
		}
	}
	if inProgress != 3 || ended > MaxEnded || ended == 0 || status.Promotions[0].PromotionRun != "ended-19" {
		t.Errorf("kept %d in progress, %d ended, latest %s: want the 3 in progress and the latest ended", inProgress, ended, status.Promotions[0].PromotionRun)
	}
	// A run's entry is replaced, not added; a run of the same name and another UID is another.
	status = Record(status, appstudiov1alpha1.GatedPromotion{PromotionRun: "waiting-0", PromotionRunUID: "u", Phase: appstudiov1alpha1.GatePhaseDeploying})
	status = Record(status, appstudiov1alpha1.GatedPromotion{PromotionRun: "waiting-1", PromotionRunUID: "v", Phase: appstudiov1alpha1.GatePhaseWaiting})
	if e, _ := EntryOf(status, "waiting-0", "u"); e.Phase != appstudiov1alpha1.GatePhaseDeploying {
		t.Errorf("waiting-0 is %s, want Deploying", e.Phase)
	}
	if e, _ := EntryOf(status, "waiting-1", "u"); e.PromotionRunUID != "u" {
		t.Errorf("waiting-1 of UID u lost: %+v", e)
	}
	if _, ok := EntryOf(status, "waiting-2", "other"); ok {
		t.Error("an entry of another UID was taken for the run's")
	}
}

func TestRollbackTarget(t *testing.T) {
	passed := func(run, app, snap string) appstudiov1alpha1.GatedPromotion {
		return appstudiov1alpha1.GatedPromotion{PromotionRun: run, PromotionRunUID: types.UID("u-" + run), Application: app, Snapshot: snap,
			Phase: appstudiov1alpha1.GatePhasePassed}
	}
	entry := appstudiov1alpha1.GatedPromotion{PromotionRun: "r4", PromotionRunUID: "u-r4", Application: "shop", Snapshot: "shop-4",
		PreviousSnapshot: "shop-3", Phase: appstudiov1alpha1.GatePhaseVerifying}
	stopped := appstudiov1alpha1.GatedPromotion{PromotionRun: "r3", PromotionRunUID: "u-r3", Application: "shop", Snapshot: "shop-3",
		Phase: appstudiov1alpha1.GatePhaseStopped}
	for _, tc := range []struct {
		name   string
		status []appstudiov1alpha1.GatedPromotion
		want   string
	}{
		{"the latest Snapshot of the Application that passed, not the one superseded on its way",
			[]appstudiov1alpha1.GatedPromotion{entry, stopped, passed("b2", "billing", "billing-2"), passed("r2", "shop", "shop-2"), passed("r1", "shop", "shop-1")}, "shop-2"},
		{"none passed: what ran before", []appstudiov1alpha1.GatedPromotion{entry, stopped, passed("b2", "billing", "billing-2")}, "shop-3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RollbackTarget(appstudiov1alpha1.PromotionGateStatus{Promotions: tc.status}, entry); got != tc.want {
				t.Errorf("rollback to %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPrune(t *testing.T) {
	status := appstudiov1alpha1.PromotionGateStatus{Promotions: []appstudiov1alpha1.GatedPromotion{
		{PromotionRun: "deleted", PromotionRunUID: "u1", Phase: appstudiov1alpha1.GatePhaseWaiting},
		{PromotionRun: "made-again", PromotionRunUID: "old", Phase: appstudiov1alpha1.GatePhaseVerifying},
		{PromotionRun: "waiting", PromotionRunUID: "u2", Phase: appstudiov1alpha1.GatePhaseWaiting},
		{PromotionRun: "deleted-after-it-passed", PromotionRunUID: "u3", Phase: appstudiov1alpha1.GatePhasePassed},
	}}
	live := func(run string, uid types.UID) bool {
		return map[string]types.UID{"waiting": "u2", "made-again": "new"}[run] == uid
	}
	var kept []string
	for _, p := range Prune(status, live).Promotions {
		kept = append(kept, p.PromotionRun)
	}
	if fmt.Sprint(kept) != "[waiting deleted-after-it-passed]" {
		t.Errorf("kept %v, want the live run's and the ended one", kept)
	}
	if len(Prune(status, nil).Promotions) != 4 {
		t.Error("pruned without knowing which runs live")
	}
}
