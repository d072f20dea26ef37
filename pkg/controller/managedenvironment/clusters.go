package managedenvironment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

// Environments share Argo CD clusters. Argo CD keeps one cache per cluster Secret, so the
// environments (of one tenant namespace or of several) whose cluster Secret would be
// identical - the same API server, credentials, TLS settings, namespaces, clusterResources
// and identity to impersonate - share one, named after a hash of that content. A tenant
// reaches a shared cluster only through an environment of its own whose credentials led there:
// the name can only be arrived at by holding the same credentials.
//
// The Secret lists the environments using it (annotationClusterUsers); each environment's
// reconcile adds or removes its own entry, under a lock per Secret name and with the
// Secret's resourceVersion as precondition, and the Secret goes with its last entry. The
// list, and the hash, stay in the Argo CD namespace: no tenant can read them.

const (
	// clusterSecretPrefix starts the name of a shared cluster Secret; the rest is its key.
	clusterSecretPrefix = "managed-cluster-"
	// clusterServerQuery is the query that makes each shared cluster's server URL, by which
	// Argo CD keys its caches, its own.
	clusterServerQuery = "?managedCluster="
	// clusterKeyLength is how many hex digits of the content's sha256 name the Secret.
	clusterKeyLength = 16

	// LabelManagedCluster marks a shared cluster Secret; its value is the Secret's key.
	LabelManagedCluster = "managed-gitops.redhat.com/managed-cluster"
	// annotationClusterKey is the whole sha256 of the content, which tells a (most unlikely)
	// collision of the short key from the same content.
	annotationClusterKey = "managed-gitops.redhat.com/cluster-key"
	// AnnotationClusterUsers lists the environments using a shared cluster Secret: a JSON list
	// of "namespace/name/uid", sorted.
	AnnotationClusterUsers = "managed-gitops.redhat.com/environments"

	// byEnvironmentRef indexes the shared cluster Secrets by the "namespace/name" of the
	// environments they list.
	byEnvironmentRef = "environmentRef"
)

// clusterUser is an environment listed on a shared cluster Secret.
type clusterUser struct {
	Namespace, Name string
	UID             types.UID
}

// key is the work queue key of the environment.
func (u clusterUser) key() string { return u.Namespace + "/" + u.Name }

func (u clusterUser) String() string { return u.Namespace + "/" + u.Name + "/" + string(u.UID) }

func userOf(env metav1.Object) clusterUser {
	return clusterUser{Namespace: env.GetNamespace(), Name: env.GetName(), UID: env.GetUID()}
}

// parseClusterUsers reads the users of a shared cluster Secret; entries that do not parse are
// dropped (the next write leaves them out).
func parseClusterUsers(s *corev1.Secret) []clusterUser {
	if s == nil || s.Annotations[AnnotationClusterUsers] == "" {
		return nil
	}
	var entries []string
	if err := json.Unmarshal([]byte(s.Annotations[AnnotationClusterUsers]), &entries); err != nil {
		return nil
	}
	users := make([]clusterUser, 0, len(entries))
	for _, e := range entries {
		parts := strings.Split(e, "/")
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			continue
		}
		users = append(users, clusterUser{Namespace: parts[0], Name: parts[1], UID: types.UID(parts[2])})
	}
	return users
}

// formatClusterUsers is the annotation value listing users, sorted and each once.
func formatClusterUsers(users []clusterUser) string {
	entries := make([]string, 0, len(users))
	for _, u := range users {
		entries = append(entries, u.String())
	}
	sort.Strings(entries)
	entries = slices.Compact(entries)
	b, _ := json.Marshal(entries) // a list of strings always encodes
	return string(b)
}

// replaceUser is users with the entries of the environment key (any UID: an earlier object of
// the same name included) taken out, and u added unless it is nil. users is not changed.
func replaceUser(users []clusterUser, key string, u *clusterUser) []clusterUser {
	out := make([]clusterUser, 0, len(users)+1)
	for _, x := range users {
		if x.key() != key {
			out = append(out, x)
		}
	}
	if u != nil {
		out = append(out, *u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// changedUsers is the entries in one of the lists only.
func changedUsers(a, b []clusterUser) []clusterUser {
	in := func(list []clusterUser, u clusterUser) bool { return slices.Contains(list, u) }
	var out []clusterUser
	for _, u := range a {
		if !in(b, u) {
			out = append(out, u)
		}
	}
	for _, u := range b {
		if !in(a, u) {
			out = append(out, u)
		}
	}
	return out
}

// environmentRefsOfSecret is the byEnvironmentRef index function.
func environmentRefsOfSecret(obj interface{}) ([]string, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok || s.Labels[LabelManagedCluster] == "" {
		return nil, nil
	}
	var keys []string
	for _, u := range parseClusterUsers(s) {
		keys = append(keys, u.key())
	}
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

// listsUser tells whether s lists u, with its UID.
func listsUser(s *corev1.Secret, u clusterUser) bool {
	return slices.Contains(parseClusterUsers(s), u)
}

// sharedClusterSecret is the shared cluster Secret for an environment that Argo CD reaches
// at apiURL with config, limited to namespaces (none: the whole cluster), impersonating
// identity. Equal inputs give the same Secret, whatever the order of the namespaces.
func sharedClusterSecret(apiURL string, config argov1alpha1.ClusterConfig, namespaces []string, clusterResources bool, identity string) (clusterSecret, error) {
	ns := append([]string(nil), namespaces...)
	sort.Strings(ns)
	ns = slices.Compact(ns)
	if len(ns) == 0 {
		// Without namespaces the Secret does not carry clusterResources: Argo CD manages the
		// whole cluster either way.
		clusterResources = false
	}
	full, err := clusterKey(apiURL, config, ns, clusterResources, identity)
	if err != nil {
		return clusterSecret{}, err
	}
	short := full[:clusterKeyLength]
	return clusterSecret{
		Name:             clusterSecretPrefix + short,
		Server:           apiURL + clusterServerQuery + short,
		Config:           config,
		Namespaces:       ns,
		ClusterResources: clusterResources,
		Labels:           map[string]string{LabelManagedCluster: short},
		Annotations:      map[string]string{argocd.AnnotationImpersonate: identity, annotationClusterKey: full},
	}, nil
}

// clusterKey is the hex sha256 of everything a shared cluster Secret holds; namespaces are
// sorted and unique.
func clusterKey(apiURL string, config argov1alpha1.ClusterConfig, namespaces []string, clusterResources bool, identity string) (string, error) {
	cfg, err := json.Marshal(config)
	if err != nil {
		return "", err
	}
	content, err := json.Marshal(struct {
		Server           string          `json:"server"`
		Config           json.RawMessage `json:"config"`
		Namespaces       []string        `json:"namespaces"`
		ClusterResources bool            `json:"clusterResources"`
		Impersonate      string          `json:"impersonate"`
	}{apiURL, cfg, namespaces, clusterResources, identity})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:]), nil
}

// clusterSecretData is the data of the Argo CD cluster Secret cs.
func clusterSecretData(cs clusterSecret) (map[string]string, error) {
	config, err := json.Marshal(cs.Config)
	if err != nil {
		return nil, err
	}
	data := map[string]string{
		argocd.ClusterKeyName:   cs.Name,
		argocd.ClusterKeyServer: cs.Server,
		argocd.ClusterKeyConfig: string(config),
	}
	if len(cs.Namespaces) > 0 {
		ns := append([]string(nil), cs.Namespaces...)
		sort.Strings(ns)
		data[argocd.ClusterKeyNamespaces] = strings.Join(ns, ",")
		data[argocd.ClusterKeyClusterScoped] = fmt.Sprint(cs.ClusterResources)
	}
	return data, nil
}

// clusterSecretLabels are the labels of cs as written.
func clusterSecretLabels(cs clusterSecret) map[string]string {
	labels := map[string]string{argocd.LabelSecretType: argocd.SecretTypeCluster}
	for k, v := range cs.Labels {
		labels[k] = v
	}
	return labels
}

// clusterUpToDate tells whether the cached Secret cur is cs with u listed, and no earlier
// object of u's name: then an environment's reconcile writes nothing.
func clusterUpToDate(cur *corev1.Secret, cs clusterSecret, u clusterUser) bool {
	if cur == nil {
		return false
	}
	data, err := clusterSecretData(cs)
	if err != nil || !argocd.SecretHas(cur, clusterSecretLabels(cs), data) || !argocd.HasAnnotations(cur, cs.Annotations) {
		return false
	}
	for _, x := range parseClusterUsers(cur) {
		if x.key() == u.key() && x != u {
			return false
		}
	}
	return listsUser(cur, u)
}

// secretAction is what a change of membership does to a shared cluster Secret.
type secretAction int

const (
	secretUnchanged secretAction = iota
	secretCreate
	secretUpdate
	secretDelete
)

func (a secretAction) String() string {
	return [...]string{"unchanged", "created cluster", "updated cluster", "deleted cluster"}[a]
}

// errClusterKeyCollision is a Secret of the name of a key whose content is another's.
var errClusterKeyCollision = fmt.Errorf("a shared cluster Secret of that name holds other content")

// joinCluster plans listing u on the shared cluster Secret cs, given the Secret live as the
// API server has it (nil: there is none): the Secret to write and how. Every other entry of
// u's name goes; the content is made cs's, as someone may have changed it.
func joinCluster(live *corev1.Secret, cs clusterSecret, namespace string, u clusterUser) (*corev1.Secret, secretAction, error) {
	data, err := clusterSecretData(cs)
	if err != nil {
		return nil, secretUnchanged, err
	}
	var next *corev1.Secret
	if live == nil {
		next = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: cs.Name, Namespace: namespace},
			Type:       corev1.SecretTypeOpaque,
		}
	} else {
		if k := live.Annotations[annotationClusterKey]; k != "" && k != cs.Annotations[annotationClusterKey] && len(parseClusterUsers(live)) > 0 {
			return nil, secretUnchanged, fmt.Errorf("%w: %s", errClusterKeyCollision, cs.Name)
		}
		next = live.DeepCopy()
	}
	if next.Labels == nil {
		next.Labels = map[string]string{}
	}
	for k, v := range clusterSecretLabels(cs) {
		next.Labels[k] = v
	}
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	for k, v := range cs.Annotations {
		next.Annotations[k] = v
	}
	next.Annotations[AnnotationClusterUsers] = formatClusterUsers(replaceUser(parseClusterUsers(live), u.key(), &u))
	next.Data = map[string][]byte{}
	for k, v := range data {
		next.Data[k] = []byte(v)
	}
	next.StringData = nil
	if live == nil {
		return next, secretCreate, nil
	}
	if argocd.SecretHas(live, next.Labels, data) && argocd.HasAnnotations(live, next.Annotations) {
		return nil, secretUnchanged, nil
	}
	return next, secretUpdate, nil
}

// leaveCluster plans taking every entry of the environment key off the shared cluster Secret
// live: the Secret without them, or its deletion when no one is left.
func leaveCluster(live *corev1.Secret, key string) (*corev1.Secret, secretAction) {
	if live == nil || live.Labels[LabelManagedCluster] == "" {
		return nil, secretUnchanged
	}
	users := parseClusterUsers(live)
	rest := replaceUser(users, key, nil)
	if len(rest) == 0 {
		return live, secretDelete
	}
	if len(rest) == len(users) && live.Annotations[AnnotationClusterUsers] == formatClusterUsers(users) {
		return nil, secretUnchanged
	}
	next := live.DeepCopy()
	next.Annotations[AnnotationClusterUsers] = formatClusterUsers(rest)
	return next, secretUpdate
}

// preferredCluster is the Secret, of those listing an environment, that its deployments go
// to: while the environment moves from one to another it is listed on both for a moment,
// and the one it leaves tells its deployments when it is gone.
func preferredCluster(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return slices.Min(names)
}

// reconciledUser picks, of the environments of a cluster Secret in the namespace of a
// deployment, the one it reconciled: the only one, or the one the deployment names.
func reconciledUser(users []clusterUser, namespace, named string) string {
	var candidates []string
	for _, u := range users {
		if u.Namespace == namespace {
			candidates = append(candidates, u.Name)
		}
	}
	switch {
	case len(candidates) == 0:
		return ""
	case slices.Contains(candidates, named):
		return named
	default:
		return slices.Min(candidates)
	}
}

// clusterSecret is an Argo CD cluster Secret in the Argo CD namespace. The credentials go
// only into this Secret (never into the GitOps objects, PostgreSQL or the log); environments
// share them (clusters.go).
type clusterSecret struct {
	// Name is both the Secret's name and the cluster's name in Argo CD.
	Name string
	// Server is the API URL. Argo CD keys its cluster cache by it, so two Secrets for the same
	// API server must differ in it (a query parameter does; reference §4.3).
	Server string
	Config argov1alpha1.ClusterConfig
	// Namespaces limits what Argo CD watches and deploys to; empty means the whole cluster.
	Namespaces       []string
	ClusterResources bool
	// Labels tie the Secret back to what it was made for.
	Labels      map[string]string
	Annotations map[string]string
}
