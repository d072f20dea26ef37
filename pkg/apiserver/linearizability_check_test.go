package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/watch"
)

// linCheckTimeout bounds porcupine's search per key when the test has no deadline; an
// undecided key fails the test.
const linCheckTimeout = 2 * time.Minute

// linHistory is everything the checker looks at.
type linHistory struct {
	Ops      []linOp
	Segments []*linSegment
	// Committed is the test namespace's part of the `changes` table, in RV order.
	Committed   []linChange
	StartRV     int64
	End         int64 // after every recorded return: where unknown outcomes "return"
	CompactedRV int64
	// GlobalGap describes a hole in the RVs of the whole `changes` table, if there is one.
	GlobalGap string
	Faults    []linFault
	// CheckTimeout bounds porcupine per key (linCheckTimeout if zero).
	CheckTimeout time.Duration
}

// linChange is one committed write: what a watch must deliver for it.
type linChange struct {
	RV    int64
	Name  string
	Type  watch.EventType
	Token string // of the value written; for a delete, of the value deleted
}

func (c linChange) String() string { return fmt.Sprintf("%d %s %s %s", c.RV, c.Type, c.Name, c.Token) }

type linReport struct {
	OpsChecked   int
	OpsByKind    map[string]int
	Unknown      int
	WatchEvents  int
	ListsChecked int
	Violations   []string
}

// waitQuiescent waits until the RV counter has not moved for a while: a request that reached a
// frozen replica may still commit after the workload stopped, and the history read afterwards
// must hold it.
func waitQuiescent(t *testing.T, dsn string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var last int64 = -1
	stableSince := time.Now()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var rv int64
		if err := conn.QueryRow(ctx, "SELECT rv FROM state").Scan(&rv); err != nil {
			t.Fatal(err)
		}
		if rv != last {
			last, stableSince = rv, time.Now()
		}
		if time.Since(stableSince) > 3*time.Second {
			return
		}
	}
	t.Fatal("the RV counter kept moving after the workload stopped")
}

// readCommittedHistory reads the test namespace's changes, the compacted RV and whether the
// RVs of all changes are contiguous.
func readCommittedHistory(t *testing.T, dsn string) (changes []linChange, compactedRV int64, globalGap string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, "SELECT rv FROM compaction").Scan(&compactedRV); err != nil {
		t.Fatal(err)
	}
	var n, lo, hi, state int64
	if err := conn.QueryRow(ctx, "SELECT count(*), coalesce(min(rv), 0), coalesce(max(rv), 0), (SELECT rv FROM state) FROM changes").
		Scan(&n, &lo, &hi, &state); err != nil {
		t.Fatal(err)
	}
	if n > 0 && (n != hi-lo+1 || hi != state) {
		globalGap = fmt.Sprintf("the changes table holds %d rows with RVs %d to %d, and state.rv is %d", n, lo, hi, state)
	}
	rows, err := conn.Query(ctx, `SELECT rv, key, created, deleted, value, prev_value FROM changes
		WHERE key LIKE '%/gitopsdeployments/`+linNamespace+`/%' ORDER BY rv`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			c                linChange
			key              string
			created, deleted bool
			value, prev      []byte
		)
		if err := rows.Scan(&c.RV, &key, &created, &deleted, &value, &prev); err != nil {
			t.Fatal(err)
		}
		c.Name = key[strings.LastIndex(key, "/")+1:]
		switch {
		case created:
			c.Type = watch.Added
		case deleted:
			c.Type, value = watch.Deleted, prev
		default:
			c.Type = watch.Modified
		}
		if c.Token, err = tokenOfStored(value); err != nil {
			t.Fatalf("change %d of %s: %v", c.RV, key, err)
		}
		changes = append(changes, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return changes, compactedRV, globalGap
}

// tokenOfStored reads the token from a stored value: JSON, since the transformer is the identity.
func tokenOfStored(value []byte) (string, error) {
	var obj struct {
		Spec struct {
			Source struct {
				Path string `json:"path"`
			} `json:"source"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(value, &obj); err != nil {
		n := min(len(value), 40)
		return "", fmt.Errorf("stored value is not JSON (%v): %q", err, value[:n])
	}
	return strings.TrimPrefix(obj.Spec.Source.Path, linPathPrefix), nil
}

// checkLinHistory runs every check and returns the figures and the violations.
func checkLinHistory(h linHistory, outDir string) linReport {
	r := linReport{OpsByKind: map[string]int{}}
	byToken := map[string]linChange{}
	for _, c := range h.Committed {
		if c.Type != watch.Deleted {
			byToken[c.Token] = c
		}
	}
	r.Violations = append(r.Violations, checkWrites(h, byToken)...)
	r.Violations = append(r.Violations, checkWatches(h, &r)...)
	r.Violations = append(r.Violations, checkLists(h, byToken, &r)...)
	r.Violations = append(r.Violations, checkKeys(h, byToken, outDir, &r)...)
	return r
}

// checkWrites holds the committed history to the writes: each acknowledged write is in it with
// the RV it was acknowledged with, each write in it was issued once and applied once.
func checkWrites(h linHistory, byToken map[string]linChange) []string {
	var v []string
	if h.GlobalGap != "" {
		v = append(v, "RVs are not gapless: "+h.GlobalGap)
	}
	seen := map[string]int{}
	for _, c := range h.Committed {
		if c.Type != watch.Deleted {
			seen[c.Token]++
			if seen[c.Token] == 2 {
				v = append(v, fmt.Sprintf("the write %s was applied twice (second time: %s)", c.Token, c))
			}
		}
	}
	issued := map[string]bool{}
	for _, op := range h.Ops {
		if !op.Kind.writes() {
			continue
		}
		issued[op.Token] = true
		if c, ok := byToken[op.Token]; ok && (op.Outcome == linNotFound || op.Outcome == linConflict) {
			v = append(v, fmt.Sprintf("write answered %s was committed as %s: %s", op.Outcome, c, op))
		}
		if op.Outcome != linOK {
			continue
		}
		want := watch.Modified
		if op.Kind == linCreate {
			want = watch.Added
		}
		c, ok := byToken[op.Token]
		switch {
		case op.Read != (linObject{}):
			v = append(v, fmt.Sprintf("acknowledged write returned another object %s@%d: %s", op.Read.Token, op.Read.RV, op))
		case !ok:
			v = append(v, fmt.Sprintf("acknowledged write is not in the committed history: %s", op))
		case c.RV != op.RV || c.Name != op.Name || c.Type != want:
			v = append(v, fmt.Sprintf("acknowledged write %s was committed as %s", op, c))
		}
	}
	for _, name := range sortedKeys(unclaimedDeletes(h)) {
		if n := unclaimedDeletes(h)[name]; n < 0 {
			v = append(v, fmt.Sprintf("key %s: %d acknowledged deletes are not in the committed history", name, -n))
		}
	}
	for _, c := range h.Committed {
		if c.Type != watch.Deleted && !issued[c.Token] {
			v = append(v, fmt.Sprintf("committed change %s comes from no recorded write", c))
		}
	}
	return v
}

// linInput and linOutput are porcupine's view of a single-key operation.
type linInput struct {
	Kind  linKind
	Token string
	IfRV  int64
	// CommittedRV is the RV the committed history gives the write's token (0 if it has none):
	// the RV an unknown write has if it took effect.
	CommittedRV int64
	// DeleteMayApply is false for an unknown delete when the change log holds no more deletes
	// of the key than were acknowledged: then none of its unknown deletes took effect.
	DeleteMayApply bool
}

type linOutput struct {
	Outcome linOutcome
	RV      int64
	Read    linObject
}

// linKeyState is one key's state: present or not, and if present the write that wrote it.
type linKeyState struct {
	Exists bool
	Token  string
	RV     int64
}

var linKeyModel = porcupine.Model{
	Init: func() interface{} { return linKeyState{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		return stepKey(state.(linKeyState), input.(linInput), output.(linOutput))
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(linInput), output.(linOutput)
		s := in.Kind.String()
		if in.Token != "" {
			s += " " + in.Token
		}
		if in.Kind == linUpdateIfRV {
			s += fmt.Sprintf(" if %d", in.IfRV)
		}
		s += " -> " + out.Outcome.String()
		if in.Kind == linGet && out.Outcome == linOK {
			s += fmt.Sprintf(" %s@%d", out.Read.Token, out.Read.RV)
		} else if out.RV != 0 {
			s += fmt.Sprintf(" @%d", out.RV)
		}
		return s
	},
	Hash: func(state interface{}) uint64 {
		s := state.(linKeyState)
		h := fnv.New64a()
		fmt.Fprintf(h, "%t %s %d", s.Exists, s.Token, s.RV)
		return h.Sum64()
	},
	DescribeState: func(state interface{}) string {
		s := state.(linKeyState)
		if !s.Exists {
			return "absent"
		}
		return fmt.Sprintf("%s@%d", s.Token, s.RV)
	},
}

// stepKey is the sequential specification of one key. An operation with an unknown outcome
// returns at the end of the history, so porcupine may place it anywhere after its call. Whether
// an unknown create or update took effect is not left open, though: its token is in the change
// log if and only if it committed (checkWrites holds the log to every acknowledged write), so
// one that did not commit is a no-op wherever it lands and one that did must apply where it
// lands. Leaving both open made the search exponential in the writes a PostgreSQL restart
// leaves unknown (88 on one key in 45 s). Deletes carry no token; if the log holds more
// deletes of the key than were acknowledged, an unknown delete stays open (applied where the
// key exists, or a no-op), otherwise it is a no-op.
func stepKey(s linKeyState, in linInput, out linOutput) (bool, linKeyState) {
	switch in.Kind {
	case linGet:
		if out.Outcome == linNotFound {
			return !s.Exists, s
		}
		return out.Outcome == linOK && s.Exists && s.Token == out.Read.Token && s.RV == out.Read.RV, s
	case linCreate:
		written := linKeyState{Exists: true, Token: in.Token, RV: out.RV}
		switch out.Outcome {
		case linOK:
			return !s.Exists, written
		case linConflict:
			return s.Exists, s
		case linUnknown:
			if in.CommittedRV == 0 {
				return true, s
			}
			written.RV = in.CommittedRV
			return !s.Exists, written
		}
	case linUpdate, linUpdateIfRV:
		applies := s.Exists && (in.Kind == linUpdate || s.RV == in.IfRV)
		written := linKeyState{Exists: true, Token: in.Token, RV: out.RV}
		switch out.Outcome {
		case linOK:
			return applies, written
		case linNotFound:
			return !s.Exists, s
		case linConflict:
			return s.Exists && in.Kind == linUpdateIfRV && s.RV != in.IfRV, s
		case linUnknown:
			if in.CommittedRV == 0 {
				return true, s
			}
			written.RV = in.CommittedRV
			return applies, written
		}
	case linDelete:
		switch out.Outcome {
		case linOK:
			return s.Exists, linKeyState{}
		case linNotFound:
			return !s.Exists, s
		case linUnknown:
			if !in.DeleteMayApply {
				return true, s
			}
			return true, linKeyState{}
		}
	}
	return false, s
}

// checkKeys checks each key's operations with porcupine, one key at a time so that a violation
// names its key; for a violation it writes porcupine's visualization.
func checkKeys(h linHistory, byToken map[string]linChange, outDir string, r *linReport) []string {
	unclaimed := unclaimedDeletes(h)
	perKey := map[string][]porcupine.Operation{}
	for _, op := range h.Ops {
		r.OpsByKind[op.Kind.String()]++
		r.OpsChecked++
		if op.Outcome == linUnknown {
			r.Unknown++
		}
		if op.Kind == linList {
			continue
		}
		if p, ok := porcupineOp(op, byToken, unclaimed[op.Name] > 0, h.End); ok {
			perKey[op.Name] = append(perKey[op.Name], p)
		}
	}
	timeout := h.CheckTimeout
	if timeout == 0 {
		timeout = linCheckTimeout
	}
	var v []string
	for _, name := range sortedKeys(perKey) {
		ops := perKey[name]
		res, info := porcupine.CheckOperationsVerbose(linKeyModel, ops, timeout)
		switch res {
		case porcupine.Ok:
			continue
		case porcupine.Unknown:
			v = append(v, fmt.Sprintf("key %s: porcupine could not decide within %s (%d operations); history: %s",
				name, timeout, len(ops), dumpOps(ops, filepath.Join(outDir, "history-"+name+".txt"))))
			continue
		}
		path := filepath.Join(outDir, "linearizability-"+name+".html")
		info.AddAnnotations(faultAnnotations(h.Faults))
		if err := porcupine.VisualizePath(linKeyModel, info, path); err != nil {
			path = "(visualization failed: " + err.Error() + ")"
		}
		v = append(v, fmt.Sprintf("key %s is not linearizable; visualization: %s\n%s", name, path, keyExcerpt(ops, info)))
	}
	return v
}

// porcupineOp converts a recorded operation; reads with unknown outcomes tell nothing and are
// left out. Unknown writes return at the end of the history, as porcupine's own tests record
// operations that timed out.
func porcupineOp(op linOp, byToken map[string]linChange, deleteMayApply bool, end int64) (porcupine.Operation, bool) {
	if op.Outcome == linUnknown && !op.Kind.writes() && op.Kind != linDelete {
		return porcupine.Operation{}, false
	}
	in := linInput{Kind: op.Kind, Token: op.Token, IfRV: op.IfRV, CommittedRV: byToken[op.Token].RV, DeleteMayApply: deleteMayApply}
	out := linOutput{Outcome: op.Outcome, RV: op.RV, Read: op.Read}
	ret := op.Return
	if op.Outcome == linUnknown {
		ret = end + 1
	}
	if op.Kind.writes() {
		out.Read = linObject{} // a mismatch is checkWrites' to report
	}
	return porcupine.Operation{ClientId: op.Client, Input: in, Call: op.Call, Output: out, Return: ret, Metadata: op.String()}, true
}

// unclaimedDeletes counts, per key, the committed deletes beyond the acknowledged ones: how many
// of its unknown deletes took effect.
func unclaimedDeletes(h linHistory) map[string]int {
	n := map[string]int{}
	for _, c := range h.Committed {
		if c.Type == watch.Deleted {
			n[c.Name]++
		}
	}
	for _, op := range h.Ops {
		if op.Kind == linDelete && op.Outcome == linOK {
			n[op.Name]--
		}
	}
	return n
}

// keyExcerpt prints the end of the longest partial linearization and the operations that could
// not follow it.
func keyExcerpt(ops []porcupine.Operation, info porcupine.LinearizationInfo) string {
	var longest []int
	for _, partition := range info.PartialLinearizations() {
		for _, lin := range partition {
			if len(lin) > len(longest) {
				longest = lin
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  longest linearizable prefix: %d of %d operations; its last ones, in linearization order:\n", len(longest), len(ops))
	state := linKeyModel.Init()
	done := map[int]bool{}
	for i, idx := range longest {
		_, state = linKeyModel.Step(state, ops[idx].Input, ops[idx].Output)
		done[idx] = true
		if i >= len(longest)-8 {
			fmt.Fprintf(&b, "    %s   => %s\n", ops[idx].Metadata, linKeyModel.DescribeState(state))
		}
	}
	rest := make([]int, 0, len(ops))
	for i := range ops {
		if !done[i] {
			rest = append(rest, i)
		}
	}
	sort.Slice(rest, func(a, c int) bool { return ops[rest[a]].Call < ops[rest[c]].Call })
	fmt.Fprintf(&b, "  none of the next operations can follow it (earliest calls first):\n")
	for i, idx := range rest {
		if i == 8 {
			break
		}
		fmt.Fprintf(&b, "    %s\n", ops[idx].Metadata)
	}
	return b.String()
}

func faultAnnotations(faults []linFault) []porcupine.Annotation {
	var a []porcupine.Annotation
	for _, f := range faults {
		a = append(a, porcupine.Annotation{Tag: "faults", Start: f.At, End: f.Done, Description: f.Kind + " " + f.Target})
	}
	return a
}

// checkWatches holds every watch segment to the committed history: from its start RV on, the
// same changes in the same order without a gap, and, for the segments still open at the end,
// up to the last change.
func checkWatches(h linHistory, r *linReport) []string {
	var v []string
	for _, seg := range h.Segments {
		expected := changesAfter(h.Committed, seg.From)
		for i, ev := range seg.Events {
			if i >= len(expected) || !sameChange(ev, expected[i]) {
				v = append(v, fmt.Sprintf("watch %d on replica-%d from RV %d diverges from the committed history at its event %d:\n%s",
					seg.Watcher, seg.Replica, seg.From, i, watchExcerpt(seg.Events, expected, i)))
				break
			}
			r.WatchEvents++
		}
		if seg.Last && len(seg.Events) < len(expected) {
			missing := expected[len(seg.Events)]
			v = append(v, fmt.Sprintf("watch %d on replica-%d from RV %d ended after %d events, without the %d committed changes from %s on",
				seg.Watcher, seg.Replica, seg.From, len(seg.Events), len(expected)-len(seg.Events), missing))
		}
		if seg.Expired != "" && seg.ExpiredAt >= h.CompactedRV {
			v = append(v, fmt.Sprintf("watch %d on replica-%d got 410 Gone resuming from RV %d, which was not compacted (compacted RV %d): %s",
				seg.Watcher, seg.Replica, seg.ExpiredAt, h.CompactedRV, seg.Expired))
		}
		for _, p := range seg.Problems {
			v = append(v, fmt.Sprintf("watch %d on replica-%d: %s", seg.Watcher, seg.Replica, p))
		}
	}
	return v
}

func changesAfter(committed []linChange, rv int64) []linChange {
	i := sort.Search(len(committed), func(i int) bool { return committed[i].RV > rv })
	return committed[i:]
}

func sameChange(ev linEvent, c linChange) bool {
	return ev.RV == c.RV && ev.Type == c.Type && ev.Name == c.Name && ev.Token == c.Token
}

func watchExcerpt(got []linEvent, want []linChange, at int) string {
	var b strings.Builder
	lo := max(0, at-3)
	b.WriteString("    delivered:                 committed:\n")
	for i := lo; i < at+4 && (i < len(got) || i < len(want)); i++ {
		g, w := "", ""
		if i < len(got) {
			g = got[i].String()
		}
		if i < len(want) {
			w = want[i].String()
		}
		mark := " "
		if i == at {
			mark = ">"
		}
		fmt.Fprintf(&b, "  %s %-26s %s\n", mark, g, w)
	}
	return b.String()
}

// checkLists holds every list to the committed history: its items are the state at its RV,
// which is at least the RV of everything acknowledged before the list was sent and below that
// of every write sent after it returned.
func checkLists(h linHistory, byToken map[string]linChange, r *linReport) []string {
	var v []string
	var lists, acked, sent []linOp
	for _, op := range h.Ops {
		switch {
		case op.Kind == linList && op.Outcome == linOK:
			lists = append(lists, op)
		case op.Kind.writes() && op.Outcome == linUnknown && byToken[op.Token].RV != 0:
			op.RV = byToken[op.Token].RV
			sent = append(sent, op)
		case op.Kind.writes() && op.Outcome == linOK:
			sent = append(sent, op)
		}
		if op.Outcome == linOK && op.RV != 0 {
			acked = append(acked, op)
		}
	}
	sort.Slice(acked, func(i, j int) bool { return acked[i].Return < acked[j].Return })
	sort.Slice(sent, func(i, j int) bool { return sent[i].Call < sent[j].Call })
	newest := runningBest(acked, false, func(a, b linOp) bool { return a.RV > b.RV })
	oldest := runningBest(sent, true, func(a, b linOp) bool { return a.RV < b.RV })
	sort.Slice(lists, func(i, j int) bool { return lists[i].RV < lists[j].RV })
	state := map[string]linObject{}
	next := 0
	for _, l := range lists {
		r.ListsChecked++
		for ; next < len(h.Committed) && h.Committed[next].RV <= l.RV; next++ {
			applyChange(state, h.Committed[next])
		}
		if _, ok := l.Items["!page-rv"]; ok {
			v = append(v, fmt.Sprintf("the pages of a list have different RVs: %s", l))
			continue
		}
		if newest, ok := newestAckedBefore(acked, newest, l.Call); ok && newest.RV > l.RV {
			v = append(v, fmt.Sprintf("list is older than an operation acknowledged before it was sent:\n    %s\n    %s", newest, l))
		}
		if oldest, ok := oldestSentAfter(sent, oldest, l.Return); ok && oldest.RV <= l.RV {
			v = append(v, fmt.Sprintf("list includes the RV of a write sent after it returned:\n    %s\n    %s", l, oldest))
		}
		if !sameItems(state, l.Items) {
			v = append(v, fmt.Sprintf("list at RV %d differs from the committed state at that RV:\n    list:      %s\n    committed: %s\n    %s",
				l.RV, formatItems(l.Items), formatItems(state), l))
		}
	}
	return v
}

func applyChange(state map[string]linObject, c linChange) {
	if c.Type == watch.Deleted {
		delete(state, c.Name)
		return
	}
	state[c.Name] = linObject{Token: c.Token, RV: c.RV}
}

// newestAckedBefore is the operation with the highest RV among those that returned before t;
// acked is sorted by return and newest[i] indexes the highest RV of acked[:i+1].
func newestAckedBefore(acked []linOp, newest []int, t int64) (linOp, bool) {
	i := sort.Search(len(acked), func(i int) bool { return acked[i].Return >= t })
	if i == 0 {
		return linOp{}, false
	}
	return acked[newest[i-1]], true
}

// oldestSentAfter is the write with the lowest RV among those sent after t; sent is sorted by
// call and oldest[i] indexes the lowest RV of sent[i:].
func oldestSentAfter(sent []linOp, oldest []int, t int64) (linOp, bool) {
	i := sort.Search(len(sent), func(i int) bool { return sent[i].Call > t })
	if i == len(sent) {
		return linOp{}, false
	}
	return sent[oldest[i]], true
}

// runningBest[i] indexes the best of ops[:i+1] (forward) or ops[i:] (backward) by better.
func runningBest(ops []linOp, backward bool, better func(a, b linOp) bool) []int {
	best := make([]int, len(ops))
	for k := range ops {
		i, prev := k, k-1
		if backward {
			i, prev = len(ops)-1-k, len(ops)-k
		}
		best[i] = i
		if k > 0 && !better(ops[i], ops[best[prev]]) {
			best[i] = best[prev]
		}
	}
	return best
}

func sameItems(a, b map[string]linObject) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		if y, ok := b[k]; !ok || x != y {
			return false
		}
	}
	return true
}

func formatItems(items map[string]linObject) string {
	var parts []string
	for _, k := range sortedKeys(items) {
		parts = append(parts, fmt.Sprintf("%s=%s@%d", k, items[k].Token, items[k].RV))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func formatCounts(n map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(n) {
		parts = append(parts, fmt.Sprintf("%s %d", k, n[k]))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// The checker must be able to fail: a history with a stale read, a watch that skips a change
// and a list that misses an acknowledged write gives one violation each, and the same history
// without them gives none.
func TestLinearizabilityCheckFindsPlantedViolations(t *testing.T) {
	committed := []linChange{
		{RV: 2, Name: "a", Type: watch.Added, Token: "t1"},
		{RV: 3, Name: "a", Type: watch.Modified, Token: "t2"},
		{RV: 4, Name: "a", Type: watch.Modified, Token: "t3"},
	}
	good := func() linHistory {
		return linHistory{
			Ops: []linOp{
				{Client: 0, Kind: linCreate, Name: "a", Token: "t1", Call: 0, Return: 10, RV: 2},
				{Client: 0, Kind: linUpdate, Name: "a", Token: "t2", Call: 20, Return: 30, RV: 3},
				{Client: 1, Kind: linGet, Name: "a", Call: 40, Return: 50, RV: 3, Read: linObject{"t2", 3}},
				{Client: 0, Kind: linUpdateIfRV, Name: "a", Token: "t3", IfRV: 3, Call: 60, Return: 70, RV: 4},
				{Client: 1, Kind: linList, Call: 80, Return: 90, RV: 4, Items: map[string]linObject{"a": {"t3", 4}}},
				// Sent to a frozen replica, never applied: it may not change anything.
				{Client: 2, Kind: linUpdate, Name: "a", Token: "t9", Call: 5, Outcome: linUnknown, Return: 100},
			},
			Segments: []*linSegment{{From: 1, Last: true, Events: []linEvent{
				{watch.Added, "a", "t1", 2}, {watch.Modified, "a", "t2", 3}, {watch.Modified, "a", "t3", 4}}}},
			Committed: committed, StartRV: 1, End: 100,
		}
	}
	dir := t.TempDir()
	if r := checkLinHistory(good(), dir); len(r.Violations) != 0 {
		t.Fatalf("a linearizable history gave violations:\n%s", strings.Join(r.Violations, "\n"))
	}

	bad := good()
	bad.Ops[2].Read, bad.Ops[2].RV = linObject{"t1", 2}, 2 // stale read
	bad.Ops[4].RV, bad.Ops[4].Items = 3, map[string]linObject{"a": {"t2", 3}}
	bad.Segments[0].Events = append(bad.Segments[0].Events[:1:1], bad.Segments[0].Events[2])
	r := checkLinHistory(bad, dir)
	for _, want := range []string{
		"key a is not linearizable",
		"watch 0 on replica-0 from RV 1 diverges from the committed history at its event 1",
		"list is older than an operation acknowledged before it was sent",
	} {
		if !containsSubstring(r.Violations, want) {
			t.Errorf("planted violation not reported: %q; got:\n%s", want, strings.Join(r.Violations, "\n"))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "linearizability-a.html")); err != nil {
		t.Errorf("no visualization of the stale read: %v", err)
	}
	for _, v := range r.Violations {
		t.Logf("reported as expected: %s", v)
	}
}

func containsSubstring(list []string, s string) bool {
	for _, x := range list {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

// dumpOps writes a key's operations in call order for a look at an undecided check.
func dumpOps(ops []porcupine.Operation, path string) string {
	sorted := append([]porcupine.Operation(nil), ops...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	var b strings.Builder
	for _, op := range sorted {
		fmt.Fprintln(&b, op.Metadata)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return err.Error()
	}
	return path
}
