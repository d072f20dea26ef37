package storage

import (
	"testing"

	storagetesting "k8s.io/apiserver/pkg/storage/testing"
)

// Every exported Run* of k8s.io/apiserver/pkg/storage/testing v0.31.14, wired like etcd3's
// own tests. RunTestOptionalWatchBookmarksWithCorrectResourceVersion runs in the cacher pass
// only: it needs bookmarks for AllowWatchBookmarks, which the raw store, like etcd3's, must
// not send (RunTestWatchDispatchBookmarkEvents checks that).

func TestCreate(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestCreate(ctx, t, s, keyValidation(s))
}

func TestCreateWithTTL(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestCreateWithTTL(ctx, t, s)
}

func TestCreateWithKeyExist(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestCreateWithKeyExist(ctx, t, s)
}

func TestGet(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestGet(ctx, t, s)
}

func TestUnconditionalDelete(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestUnconditionalDelete(ctx, t, s)
}

func TestConditionalDelete(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestConditionalDelete(ctx, t, s)
}

func TestDeleteWithSuggestion(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestDeleteWithSuggestion(ctx, t, s)
}

func TestDeleteWithSuggestionAndConflict(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestDeleteWithSuggestionAndConflict(ctx, t, s)
}

func TestDeleteWithConflict(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestDeleteWithConflict(ctx, t, s)
}

func TestDeleteWithSuggestionOfDeletedObject(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestDeleteWithSuggestionOfDeletedObject(ctx, t, s)
}

func TestValidateDeletionWithSuggestion(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestValidateDeletionWithSuggestion(ctx, t, s)
}

func TestValidateDeletionWithOnlySuggestionValid(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestValidateDeletionWithOnlySuggestionValid(ctx, t, s)
}

func TestPreconditionalDeleteWithSuggestion(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestPreconditionalDeleteWithSuggestion(ctx, t, s)
}

func TestPreconditionalDeleteWithOnlySuggestionPass(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestPreconditionalDeleteWithOnlySuggestionPass(ctx, t, s)
}

func TestList(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestList(ctx, t, s, compaction(s), false)
}

func TestConsistentList(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestConsistentList(ctx, t, s, compaction(s), false, true)
}

func TestGetListNonRecursive(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestGetListNonRecursive(ctx, t, compaction(s), s)
}

func TestGetListRecursivePrefix(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestGetListRecursivePrefix(ctx, t, s)
}

func TestListContinuation(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestListContinuation(ctx, t, s, readsValidation(s))
}

func TestListPaginationRareObject(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestListPaginationRareObject(ctx, t, s, readsValidation(s))
}

func TestListContinuationWithFilter(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestListContinuationWithFilter(ctx, t, s, readsValidation(s))
}

func TestListInconsistentContinuation(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestListInconsistentContinuation(ctx, t, s, compaction(s))
}

func TestListResourceVersionMatch(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestListResourceVersionMatch(ctx, t, withPrefix{s})
}

func TestGuaranteedUpdate(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestGuaranteedUpdate(ctx, t, withPrefix{s}, keyValidation(s))
}

func TestGuaranteedUpdateWithTTL(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestGuaranteedUpdateWithTTL(ctx, t, s)
}

func TestGuaranteedUpdateChecksStoredData(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestGuaranteedUpdateChecksStoredData(ctx, t, withPrefix{s})
}

func TestGuaranteedUpdateWithConflict(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestGuaranteedUpdateWithConflict(ctx, t, s)
}

func TestGuaranteedUpdateWithSuggestionAndConflict(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestGuaranteedUpdateWithSuggestionAndConflict(ctx, t, s)
}

func TestTransformationFailure(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestTransformationFailure(ctx, t, withPrefix{s})
}

func TestCount(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestCount(ctx, t, s)
}

func TestWatch(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestWatch(ctx, t, s)
}

func TestWatchFromZero(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestWatchFromZero(ctx, t, s, compaction(s))
}

func TestDeleteTriggerWatch(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestDeleteTriggerWatch(ctx, t, s)
}

func TestWatchFromNonZero(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestWatchFromNonZero(ctx, t, s)
}

func TestDelayedWatchDelivery(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestDelayedWatchDelivery(ctx, t, s)
}

func TestWatchError(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestWatchError(ctx, t, withPrefix{s})
}

func TestWatchContextCancel(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestWatchContextCancel(ctx, t, s)
}

func TestWatcherTimeout(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestWatcherTimeout(ctx, t, s)
}

func TestWatchDeleteEventObjectHaveLatestRV(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestWatchDeleteEventObjectHaveLatestRV(ctx, t, s)
}

func TestWatchInitializationSignal(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestWatchInitializationSignal(ctx, t, s)
}

func TestProgressNotify(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunOptionalTestProgressNotify(ctx, t, s)
}

func TestClusterScopedWatch(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestClusterScopedWatch(ctx, t, s)
}

func TestNamespaceScopedWatch(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestNamespaceScopedWatch(ctx, t, s)
}

func TestWatchDispatchBookmarkEvents(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunTestWatchDispatchBookmarkEvents(ctx, t, s, false)
}

func TestSendInitialEventsBackwardCompatibility(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunSendInitialEventsBackwardCompatibility(ctx, t, s)
}

func TestWatchSemantics(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunWatchSemantics(ctx, t, s)
}

func TestWatchSemanticInitialEventsExtended(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunWatchSemanticInitialEventsExtended(ctx, t, s)
}

func TestWatchErrorIsBlockingFurtherEvents(t *testing.T) {
	ctx, s := testSetup(t)
	storagetesting.RunWatchErrorIsBlockingFurtherEvents(ctx, t, withPrefix{s})
}
