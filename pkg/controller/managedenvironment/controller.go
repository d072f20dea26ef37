// Package managedenvironment is the GitOpsDeploymentManagedEnvironment controller: an
// environment's credentials are checked against its cluster (and, with createNewServiceAccount,
// a ServiceAccount of its own is installed there and removed again when the environment goes),
// and the environment becomes an entry on a shared Argo CD cluster Secret (clusters.go); the
// outcome becomes its ConnectionInitializationSucceeded condition and Events. It is one of the
// agent's Argo CD controllers, run under the Argo CD Lease.
//
// Clusters answers, from the same caches, which Argo CD cluster a GitOpsDeployment's environment
// deploys to: the GitOpsDeployment controller's side of the contract. The controller queues
// nothing of another controller's: the GitOpsDeployment controller (pkg/controller/gitopsdeployment)
// watches the environments and the cluster Secrets itself, and ClusterSecretEnvironments tells it
// which environments a cluster Secret's change concerns.
package managedenvironment

import (
	"context"
	"fmt"
	"slices"
	"time"

	argoinformers "github.com/argoproj/argo-cd/v2/pkg/client/informers/externalversions/application/v1alpha1"
	argolisters "github.com/argoproj/argo-cd/v2/pkg/client/listers/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/controller/operations"
	"github.com/gitops-service/gitops-service/pkg/controller/tenancy"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	managedinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/managedgitops/v1alpha1"
)

// Labels of the Argo CD cluster Secret the agent used to make for each
// GitOpsDeploymentManagedEnvironment alone (ClusterSecretName); environments now share
// cluster Secrets (clusters.go), and the agent deletes these once nothing uses them.
const (
	LabelEnvironmentNamespace = "managed-gitops.redhat.com/managedenvironment-namespace"
	LabelEnvironmentUID       = "managed-gitops.redhat.com/managedenvironment-uid"
)

// Informer indexes of the environment controller.
const (
	// byCredentialsSecret: environments by the "namespace/name" of their Secret.
	byCredentialsSecret = "credentialsSecret"
	// byUID: environments by UID, to name the environment of an Argo CD cluster.
	byUID = "uid"
)

const (
	// revalidateAfter is when a connected environment's credentials are checked again: a
	// token can be revoked on the cluster without any event here.
	revalidateAfter = 10 * time.Minute
	// retryUnreachableAfter is when a cluster that could not be reached or validated is
	// tried again, without the Secret or the environment having changed.
	retryUnreachableAfter = 30 * time.Second
)

// ClusterSecretName is the name of the Argo CD cluster Secret, and cluster, that earlier
// agents made for the ManagedEnvironment with the given UID alone.
func ClusterSecretName(uid types.UID) string { return "managed-env-" + string(uid) }

// Name is the controller's name in logs and metrics.
const Name = "managedenvironments"

// fieldManager is the field manager of the controller's writes.
const fieldManager = argocd.FieldManager

// Controller reconciles GitOpsDeploymentManagedEnvironments into Argo CD cluster Secrets.
type Controller struct {
	*framework.Controller
	// Clusters reads which cluster Secrets list an environment.
	*Clusters

	gitops versioned.Interface
	// kube reads the tenants' Secrets; argoKube writes the Argo CD namespace's cluster
	// Secrets, on the cluster Argo CD runs on (kube when nil: the API's own cluster).
	kube, argoKube kubernetes.Interface
	recorder       record.EventRecorder
	// ops records the controller's writes to cluster Secrets as Operations.
	ops *operations.Recorder

	// secrets holds the Secrets of the managed-environment type, in every namespace.
	secrets      corelisters.SecretLister
	applications argolisters.ApplicationLister
	// clusterLocks serialises the workers' changes to a shared cluster Secret.
	clusterLocks keyedMutex
	// cacheWait bounds how long a reconcile that changed a shared cluster Secret waits for
	// the cache to show it (awaitClusterCache); zero does not wait.
	cacheWait time.Duration
	// served are the tenant namespaces served (serve.go): every one when nil.
	served *tenancy.Tenants

	now func() time.Time
}

// New wires the controller's handlers and indexes into the informers: an environment is queued
// by its own events, by those of its Secret (credentialSecrets: the tenants' Secrets of
// ManagedEnvironmentSecretType, in every namespace) and by those of the cluster Secrets that
// list it (argoSecrets: the Argo CD namespace's Secrets). deployments tell Clusters which
// environment a deployment names. The informers are shared with the other Argo CD controllers.
func New(
	envs managedinformers.GitOpsDeploymentManagedEnvironmentInformer,
	credentialSecrets framework.Secrets,
	deployments managedinformers.GitOpsDeploymentInformer,
	argoSecrets coreinformers.SecretInformer,
	applications argoinformers.ApplicationInformer,
	argoNamespace string,
	gitops versioned.Interface,
	kube, argoKube kubernetes.Interface,
	ops *operations.Recorder,
	recorder record.EventRecorder,
) (*Controller, error) {
	clusters, err := NewClusters(envs, argoSecrets, deployments.Lister(), argoNamespace)
	if err != nil {
		return nil, err
	}
	envInformer := envs.Informer()
	if err := envInformer.AddIndexers(cache.Indexers{byCredentialsSecret: credentialsSecretKey}); err != nil {
		return nil, err
	}
	e := &Controller{
		Clusters:     clusters,
		gitops:       gitops,
		kube:         kube,
		argoKube:     argoKube,
		recorder:     recorder,
		ops:          ops,
		secrets:      credentialSecrets.Lister(),
		applications: applications.Lister(),
		cacheWait:    5 * time.Second,
		now:          time.Now,
	}
	e.Controller = framework.NewController(Name, e.sync)

	// The environment itself needs no second look at a status it just wrote (its generation
	// moves only with its spec), which would cost a request to its cluster. (Its deployments
	// follow its status: the GitOpsDeployment controller watches the environments too.)
	if err := e.Watch(envInformer, cache.ResourceEventHandlerFuncs{
		AddFunc: e.Enqueue,
		UpdateFunc: func(old, obj interface{}) {
			o, n := old.(*managedv1alpha1.GitOpsDeploymentManagedEnvironment), obj.(*managedv1alpha1.GitOpsDeploymentManagedEnvironment)
			if o.Generation != n.Generation || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
				slices.Contains(o.Finalizers, EnvironmentFinalizer) != slices.Contains(n.Finalizers, EnvironmentFinalizer) {
				e.Enqueue(obj)
			}
		},
		DeleteFunc: e.Enqueue,
	}); err != nil {
		return nil, err
	}

	// A referenced Secret that comes, changes or goes queues the environments that name it.
	if err := e.Watch(credentialSecrets, e.EnqueueUsers(envInformer.GetIndexer(), byCredentialsSecret)); err != nil {
		return nil, err
	}

	// A cluster Secret changed or deleted by someone else is rewritten; the entry of an
	// environment that is gone (deleted while the agent was not running) is collected. At
	// start-up every cluster Secret comes by as an add.
	if err := e.Watch(argoSecrets.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { e.onClusterSecretEvent(nil, obj, false) },
		UpdateFunc: func(old, obj interface{}) { e.onClusterSecretEvent(old, obj, false) },
		DeleteFunc: func(obj interface{}) { e.onClusterSecretEvent(nil, obj, true) },
	}); err != nil {
		return nil, err
	}
	return e, nil
}

// Run reconciles environments with workers workers until ctx is done.
func (e *Controller) Run(ctx context.Context, workers int) { e.Controller.Run(ctx, workers) }

// recordChange records a write the controller made (err nil) or failed to make in Argo CD.
func (e *Controller) recordChange(rt managedv1alpha1.OperationResourceType, kind, name string,
	source managedv1alpha1.OperationSource, action string, err error,
) {
	if e.ops == nil {
		return
	}
	e.ops.Record(operations.Change{
		ResourceType: rt,
		Target:       managedv1alpha1.OperationTarget{Kind: kind, Namespace: e.argoNamespace, Name: name},
		Source:       source, Action: action, Err: err,
	})
}

// namespaceKey is the work queue key that collects the cluster Secrets of the deleted
// environments of a namespace: a key with no name, which no environment has.
func namespaceKey(namespace string) string { return namespace + "/" }

func credentialsSecretKey(obj interface{}) ([]string, error) {
	env, ok := obj.(*managedv1alpha1.GitOpsDeploymentManagedEnvironment)
	if !ok || env.Spec.ClusterCredentialsSecret == "" {
		return nil, nil
	}
	return []string{env.Namespace + "/" + env.Spec.ClusterCredentialsSecret}, nil
}

func uidKey(obj interface{}) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	return []string{string(m.GetUID())}, nil
}

// sync makes the Argo CD cluster Secret of one environment key match the environment and its
// Secret, and reports the outcome in the environment's status.
func (e *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	if name == "" {
		return e.collectClusterSecrets(ctx, namespace)
	}
	env, err := e.envs.GitOpsDeploymentManagedEnvironments(namespace).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && !e.served.Keeps(namespace)) {
		// The shared cluster Secrets still listing it know its UID. A tenant this instance has
		// released is let go here as if its environment were gone.
		if err := e.releaseClusters(ctx, clusterUser{Namespace: namespace, Name: name}); err != nil {
			return err
		}
		return e.collectClusterSecrets(ctx, namespace)
	}
	if err != nil {
		return err
	}
	if env.DeletionTimestamp != nil {
		return e.finalizeEnvironment(ctx, env)
	}
	if env.Spec.CreateNewServiceAccount && !slices.Contains(env.Finalizers, EnvironmentFinalizer) {
		return e.addEnvironmentFinalizer(ctx, env)
	}

	cs, conn, err := e.connect(ctx, env)
	if err != nil {
		return err
	}
	if cs != nil {
		if err := e.syncClusterMembership(ctx, env, *cs); err != nil {
			return err
		}
		if _, legacy := e.environmentClusters(env); legacy != "" {
			e.Add(namespaceKey(env.Namespace)) // collects it once no Application uses it
		}
	} else if err := e.deleteClusterSecret(ctx, env); err != nil {
		return err
	}
	if err := e.updateStatus(ctx, env, conn); err != nil {
		return err
	}
	switch {
	case conn.status == metav1.ConditionTrue:
		e.Queue.AddAfter(key, revalidateAfter)
	case conn.reason == managedv1alpha1.ManagedEnvironmentReasonUnableToValidateClusterCredentials ||
		conn.reason == managedv1alpha1.ManagedEnvironmentReasonUnableToInstallServiceAccount:
		e.Queue.AddAfter(key, retryUnreachableAfter)
	}
	return nil
}

// connect reads the environment's Secret, connects to the cluster with it and returns the
// cluster Secret to write (nil when the environment is not usable) and the condition. An error
// is the agent's own trouble (reading the Secret), to be retried.
func (e *Controller) connect(ctx context.Context, env *managedv1alpha1.GitOpsDeploymentManagedEnvironment) (*clusterSecret, connection, error) {
	secret, err := e.credentialsSecret(ctx, env)
	if apierrors.IsNotFound(err) {
		return nil, *connectionFailed(managedv1alpha1.ManagedEnvironmentReasonKubernetesError,
			"the Secret '%s' of .spec.credentialsSecret was not found in namespace '%s'", env.Spec.ClusterCredentialsSecret, env.Namespace), nil
	}
	if err != nil {
		return nil, connection{}, err
	}
	creds, cond := parseCredentials(env, secret)
	if cond != nil {
		return nil, *cond, nil
	}
	client, err := kubernetes.NewForConfig(creds.restConfig(env.Spec.APIURL))
	if err != nil {
		return nil, *connectionFailed(managedv1alpha1.ManagedEnvironmentReasonUnableToCreateClient,
			"unable to create a client for the cluster from the managed environment secret: %v", err), nil
	}
	if env.Spec.CreateNewServiceAccount {
		token, err := installServiceAccount(ctx, client, env.UID, env.Spec.Namespaces, managesWholeCluster(env.Spec))
		if err != nil {
			klog.InfoS("installing the ServiceAccount of a managed environment failed", "environment", klog.KObj(env), "err", err)
			msg := "unable to install service account from secret '" + env.Spec.ClusterCredentialsSecret + "'"
			if apierrors.IsForbidden(err) {
				msg += ": the credentials may not create ServiceAccounts, RBAC objects and Secrets"
			}
			return nil, *connectionFailed(managedv1alpha1.ManagedEnvironmentReasonUnableToInstallServiceAccount, "%s", msg), nil
		}
		// Argo CD deploys as the new ServiceAccount, not with what the kubeconfig had.
		creds = &credentials{context: creds.context, bearerToken: token, caData: creds.caData, serverName: creds.serverName, insecure: creds.insecure}
		if client, err = kubernetes.NewForConfig(creds.restConfig(env.Spec.APIURL)); err != nil {
			return nil, *connectionFailed(managedv1alpha1.ManagedEnvironmentReasonUnableToCreateClient,
				"unable to create a client for the cluster with the new service account: %v", err), nil
		}
	}
	if err := verifyCredentials(ctx, client, env.Spec.Namespaces); err != nil {
		klog.InfoS("the credentials of a managed environment did not validate", "environment", klog.KObj(env), "err", err)
		return nil, *validationFailed(err), nil
	}
	identity, cond, err := credentialsIdentity(ctx, client)
	if err != nil {
		klog.InfoS("could not tell whose the credentials of a managed environment are", "environment", klog.KObj(env), "err", err)
		return nil, *validationFailed(err), nil
	}
	if cond != nil {
		return nil, *cond, nil
	}
	// Environments with the same cluster Secret content share it, and Argo CD's cache of it; the
	// query in its server keeps it apart from those of other credentials for the same API
	// server (reference §4.3).
	cs, err := sharedClusterSecret(env.Spec.APIURL, creds.clusterConfig(), env.Spec.Namespaces, env.Spec.ClusterResources, identity)
	if err != nil {
		return nil, connection{}, err
	}
	return &cs, connectionSucceeded, nil
}

// credentialsSecret is the environment's Secret, from the namespace of the environment only.
// The cache holds only Secrets of the right type, so a miss is asked of the server, which can
// tell a Secret of the wrong type from a missing one.
func (e *Controller) credentialsSecret(ctx context.Context, env *managedv1alpha1.GitOpsDeploymentManagedEnvironment) (*corev1.Secret, error) {
	if env.Spec.ClusterCredentialsSecret == "" {
		return nil, apierrors.NewNotFound(corev1.Resource("secrets"), "")
	}
	s, err := e.secrets.Secrets(env.Namespace).Get(env.Spec.ClusterCredentialsSecret)
	if err == nil || !apierrors.IsNotFound(err) {
		return s, err
	}
	return e.kube.CoreV1().Secrets(env.Namespace).Get(ctx, env.Spec.ClusterCredentialsSecret, metav1.GetOptions{})
}

// updateStatus sets the ConnectionInitializationSucceeded condition, and writes the status only
// when that changed it, and then records the Events of the change. SetStatusCondition keeps
// lastTransitionTime while the status stays.
func (e *Controller) updateStatus(ctx context.Context, env *managedv1alpha1.GitOpsDeploymentManagedEnvironment, conn connection) error {
	conds := environmentConditions(env, conn, metav1.NewTime(e.now()))
	if apiequality.Semantic.DeepEqual(conds, env.Status.Conditions) {
		return nil
	}
	upd := env.DeepCopy()
	upd.Status.Conditions = conds
	written, err := e.gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(env.Namespace).UpdateStatus(ctx, upd,
		metav1.UpdateOptions{FieldManager: fieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating the status of GitOpsDeploymentManagedEnvironment %s/%s: %w", env.Namespace, env.Name, err)
	}
	klog.V(2).InfoS("managed environment", "environment", klog.KObj(env), "status", conn.status, "reason", conn.reason)
	e.recordEvents(written, environmentEvents(env, conds))
	return nil
}

// environmentConditions is the environment's conditions with conn set.
func environmentConditions(env *managedv1alpha1.GitOpsDeploymentManagedEnvironment, conn connection, now metav1.Time) []metav1.Condition {
	conds := make([]metav1.Condition, len(env.Status.Conditions))
	copy(conds, env.Status.Conditions)
	msg := conn.message
	if len(msg) > 32768 { // the API's limit for a condition message
		msg = msg[:32768]
	}
	meta.SetStatusCondition(&conds, metav1.Condition{
		Type:               managedv1alpha1.ManagedEnvironmentStatusConnectionInitializationSucceeded,
		Status:             conn.status,
		Reason:             string(conn.reason),
		Message:            msg,
		ObservedGeneration: env.Generation,
		LastTransitionTime: now,
	})
	return conds
}

// deleteClusterSecret takes env off its shared cluster Secrets (the last user deletes one) and
// deletes the Secret an earlier agent made for it alone, if the cache has it. One the cache
// has not seen yet is deleted when its add event brings env back here.
func (e *Controller) deleteClusterSecret(ctx context.Context, env *managedv1alpha1.GitOpsDeploymentManagedEnvironment) error {
	if err := e.releaseClusters(ctx, userOf(env)); err != nil {
		return err
	}
	name := ClusterSecretName(env.UID)
	if _, err := e.argoSecrets.Secrets(e.argoNamespace).Get(name); apierrors.IsNotFound(err) {
		return nil
	}
	return argocd.DeleteSecret(ctx, e.argoClient(), e.argoNamespace, name)
}

// legacyCollectRetry is when the collection of a namespace's per-environment cluster Secrets
// looks again at those that Applications still deploy through.
const legacyCollectRetry = 5 * time.Second

// collectClusterSecrets deletes the cluster Secrets that earlier agents made for each
// environment of namespace alone, once nothing uses them: their environment is gone (being
// keyed by name, the controller does not know the UID of an environment that is gone; the
// labels of the Secrets do), or it has moved to a shared cluster Secret and no Application
// deploys through the old one any more (one being retired prunes through it).
func (e *Controller) collectClusterSecrets(ctx context.Context, namespace string) error {
	list, err := e.argoSecrets.Secrets(e.argoNamespace).List(labels.SelectorFromSet(labels.Set{LabelEnvironmentNamespace: namespace}))
	if err != nil {
		return err
	}
	waiting := false
	for _, s := range list {
		envs, err := e.envIndex.ByIndex(byUID, s.Labels[LabelEnvironmentUID])
		if err != nil {
			return err
		}
		if len(envs) > 0 {
			env := envs[0].(*managedv1alpha1.GitOpsDeploymentManagedEnvironment)
			if shared, _ := e.environmentClusters(env); len(shared) == 0 {
				continue // its own reconcile decides
			}
			if e.applicationsOnCluster(s.Name) > 0 {
				waiting = true
				continue
			}
		}
		if err := argocd.DeleteSecret(ctx, e.argoClient(), e.argoNamespace, s.Name); err != nil {
			return err
		}
		klog.V(2).InfoS("deleted the per-environment cluster Secret of an earlier agent", "secret", s.Name)
	}
	if waiting {
		e.Queue.AddAfter(namespaceKey(namespace), legacyCollectRetry)
	}
	return nil
}

// managesWholeCluster tells whether Argo CD (and, with createNewServiceAccount, the account
// the agent installs) manages the environment's whole cluster rather than its namespaces:
// when it names none, or when it asks for cluster resources as well.
func managesWholeCluster(spec managedv1alpha1.ManagedEnvironmentSpec) bool {
	return len(spec.Namespaces) == 0 || spec.ClusterResources
}

// argoClient is the client of the cluster Argo CD runs on.
func (e *Controller) argoClient() kubernetes.Interface {
	if e.argoKube != nil {
		return e.argoKube
	}
	return e.kube
}
