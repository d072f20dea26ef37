// Package environment is the Environment controller: each appstudio.redhat.com Environment that
// points at a cluster, through the credentials in its unstableConfigurationFields or through the
// DeploymentTarget bound to its DeploymentTargetClaim, gets a GitOpsDeploymentManagedEnvironment
// named managed-environment-<environment>, through which its SnapshotEnvironmentBindings deploy
// (reference §3.7).
//
// Deletion needs no finalizer on the Environment. The ManagedEnvironment and the copied Secret
// carry the Environment's name (in their ownerReference and label), and their informers
// deliver every one of them as an add when the controller starts: one whose Environment is gone
// is deleted then, whether the Environment went while the controller ran or while it did not,
// as the agent retires the Argo CD Applications of deleted GitOpsDeployments. A finalizer
// would instead keep Environments from being deleted whenever the controller is not running.
package environment

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/promotiongraph"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/targetindex"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	appstudioinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/appstudio/v1alpha1"
	managedinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/managedgitops/v1alpha1"
	appstudiolisters "github.com/gitops-service/gitops-service/pkg/generated/listers/appstudio/v1alpha1"
	managedlisters "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
)

// Name is the controller's name in logs and metrics.
const Name = "environments"

// fieldManager is the field manager of the controller's writes.
const fieldManager = "gitops-service-agent"

// Event reasons, besides the problems' (the Reconciled condition's reasons), which are Warnings.
const (
	EventManagedEnvironmentCreated = "ManagedEnvironmentCreated"
	EventManagedEnvironmentUpdated = "ManagedEnvironmentUpdated"
	EventManagedEnvironmentDeleted = "ManagedEnvironmentDeleted"
	EventSecretCopied              = "SecretCopied"
	EventSecretCopyUpdated         = "SecretCopyUpdated"
	EventSecretCopyDeleted         = "SecretCopyDeleted"
)

// Informer indexes, named after the controller: other controllers share the informers.
const (
	// bySecret: Environments by their credentials Secret; DeploymentTargets by theirs.
	bySecret = "environment.appstudio/secret"
)

// Controller reconciles Environments into GitOpsDeploymentManagedEnvironments.
type Controller struct {
	*framework.Controller

	gitops   versioned.Interface
	kube     kubernetes.Interface
	recorder record.EventRecorder

	environments     appstudiolisters.EnvironmentLister
	environmentIndex cache.Indexer
	claims           appstudiolisters.DeploymentTargetClaimLister
	targets          appstudiolisters.DeploymentTargetLister
	targetIndex      cache.Indexer
	// follower follows a claim or a target to the Environments that use it.
	follower            *targetindex.Follower
	managedEnvironments managedlisters.GitOpsDeploymentManagedEnvironmentLister
	// secrets holds the Secrets of the managed-environment type: those Environments name
	// directly, those DeploymentTargets name, and the copies. sources watches the others that
	// DeploymentTargets name.
	secrets corelisters.SecretLister
	sources *sourceSecrets

	now func() time.Time
}

// New wires the controller's handlers and indexes into the informers; secrets must hold the
// Secrets of the managed-environment type only (a field selector on type), not every Secret.
func New(
	environments appstudioinformers.EnvironmentInformer,
	claims appstudioinformers.DeploymentTargetClaimInformer,
	targets appstudioinformers.DeploymentTargetInformer,
	managedEnvironments managedinformers.GitOpsDeploymentManagedEnvironmentInformer,
	secrets framework.Secrets,
	gitops versioned.Interface,
	kube kubernetes.Interface,
	recorder record.EventRecorder,
) (*Controller, error) {
	c := &Controller{
		gitops:              gitops,
		kube:                kube,
		recorder:            recorder,
		environments:        environments.Lister(),
		environmentIndex:    environments.Informer().GetIndexer(),
		claims:              claims.Lister(),
		targets:             targets.Lister(),
		targetIndex:         targets.Informer().GetIndexer(),
		managedEnvironments: managedEnvironments.Lister(),
		secrets:             secrets.Lister(),
		now:                 time.Now,
	}
	c.Controller = framework.NewController(Name, c.sync)
	c.sources = newSourceSecrets(kube, c.Add)

	var err error
	if c.follower, err = targetindex.NewFollower(environments.Informer(), claims.Informer(), targets.Informer()); err != nil {
		return nil, err
	}
	if err := environments.Informer().AddIndexers(cache.Indexers{bySecret: secretOfEnvironment}); err != nil {
		return nil, err
	}
	if err := targets.Informer().AddIndexers(cache.Indexers{bySecret: secretOfTarget}); err != nil {
		return nil, err
	}

	// Status writes, the controller's own among them, leave the generation alone and need no
	// second look.
	if err := c.Watch(environments.Informer(), framework.OnGenerationChange(c.onEnvironment)); err != nil {
		return nil, err
	}
	if err := c.Watch(claims.Informer(), framework.OnChange(c.onClaim)); err != nil {
		return nil, err
	}
	if err := c.Watch(targets.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: c.onTarget,
		UpdateFunc: func(old, obj interface{}) {
			c.onTarget(old) // a claimRef it no longer has
			c.onTarget(obj)
		},
		DeleteFunc: c.onTarget,
	}); err != nil {
		return nil, err
	}
	// The ManagedEnvironment controller writes their status; only their spec and owners are
	// this controller's business.
	if err := c.Watch(managedEnvironments.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: c.onManagedEnvironment,
		UpdateFunc: func(old, obj interface{}) {
			o, n := old.(*managedv1alpha1.GitOpsDeploymentManagedEnvironment), obj.(*managedv1alpha1.GitOpsDeploymentManagedEnvironment)
			if o.Generation != n.Generation || !apiequality.Semantic.DeepEqual(o.OwnerReferences, n.OwnerReferences) {
				c.onManagedEnvironment(old) // an owner it no longer has
				c.onManagedEnvironment(obj)
			}
		},
		DeleteFunc: c.onManagedEnvironment,
	}); err != nil {
		return nil, err
	}
	if err := c.Watch(secrets, framework.OnChange(c.onSecret)); err != nil {
		return nil, err
	}
	return c, nil
}

// Run reconciles Environments with the given number of workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.sources.start(ctx)
	c.Controller.Run(ctx, workers)
}

func secretOfEnvironment(obj interface{}) ([]string, error) {
	env, ok := obj.(*appstudiov1alpha1.Environment)
	if !ok || env.Spec.UnstableConfigurationFields == nil || env.Spec.UnstableConfigurationFields.KubernetesClusterCredentials.ClusterCredentialsSecret == "" {
		return nil, nil
	}
	return []string{env.Namespace + "/" + env.Spec.UnstableConfigurationFields.KubernetesClusterCredentials.ClusterCredentialsSecret}, nil
}

func secretOfTarget(obj interface{}) ([]string, error) {
	t, ok := obj.(*appstudiov1alpha1.DeploymentTarget)
	if !ok || t.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret == "" {
		return nil, nil
	}
	return []string{t.Namespace + "/" + t.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret}, nil
}

// onEnvironment queues the Environment and the others of its namespace: a change of parent
// may break or mend the promotion graph of those below it.
func (c *Controller) onEnvironment(obj interface{}) {
	env, ok := framework.UnwrapTombstone(obj).(*appstudiov1alpha1.Environment)
	if !ok {
		return
	}
	c.Enqueue(obj)
	others, err := c.environments.Environments(env.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, o := range others {
		if o.Name != env.Name {
			c.Enqueue(o)
		}
	}
}

func (c *Controller) onClaim(obj interface{}) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		for _, env := range c.follower.EnvironmentsOfClaim(key) {
			c.Enqueue(env)
		}
	}
}

// onTarget queues the Environments of the claims that the target claims or that name it.
func (c *Controller) onTarget(obj interface{}) {
	for _, env := range c.follower.EnvironmentsOfTarget(obj) {
		c.Enqueue(env)
	}
}

// onManagedEnvironment queues the Environment a ManagedEnvironment was made for.
func (c *Controller) onManagedEnvironment(obj interface{}) {
	me, ok := framework.UnwrapTombstone(obj).(*managedv1alpha1.GitOpsDeploymentManagedEnvironment)
	if !ok {
		return
	}
	for _, r := range me.OwnerReferences {
		if r.APIVersion == ownerAPIVersion && r.Kind == ownerKind {
			c.Add(me.Namespace + "/" + r.Name)
		}
	}
}

// onSecret queues the Environments that use a managed-environment Secret: directly, through
// a DeploymentTarget, or as their copy.
func (c *Controller) onSecret(obj interface{}) {
	s, ok := framework.UnwrapTombstone(obj).(*corev1.Secret)
	if !ok {
		return
	}
	key := s.Namespace + "/" + s.Name
	envs, _ := c.environmentIndex.ByIndex(bySecret, key)
	for _, e := range envs {
		c.Enqueue(e)
	}
	targets, _ := c.targetIndex.ByIndex(bySecret, key)
	for _, t := range targets {
		c.onTarget(t)
	}
	if env := s.Labels[appstudiov1alpha1.EnvironmentSecretLabel]; env != "" {
		c.Add(s.Namespace + "/" + env)
	}
}

// sync makes the ManagedEnvironment (and copied Secret) of one Environment key match the
// Environment, and reports problems in the Environment's status.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	s, err := c.observe(ctx, key, namespace, name)
	if err != nil {
		return err
	}
	return c.act(ctx, s, planEnvironment(s, metav1.NewTime(c.now())))
}

// observe gathers the state of one Environment from the informers' caches (and the
// kube-apiserver, for a Secret they do not hold).
func (c *Controller) observe(ctx context.Context, key, namespace, name string) (state, error) {
	s := state{namespace: namespace, name: name}
	var err error
	if s.env, err = framework.OrNil(c.environments.Environments(namespace).Get(name)); err != nil {
		return s, err
	}
	if s.managedEnvironment, err = framework.OrNil(c.managedEnvironments.GitOpsDeploymentManagedEnvironments(namespace).Get(ManagedEnvironmentName(name))); err != nil {
		return s, err
	}
	if s.copy, err = framework.OrNil(c.secrets.Secrets(namespace).Get(CopiedSecretName(name))); err != nil {
		return s, err
	}
	if s.env == nil {
		c.sources.release(key)
		return s, nil
	}
	envs, err := c.environments.Environments(namespace).List(labels.Everything())
	if err != nil {
		return s, err
	}
	if problem, broken := promotiongraph.New(promotiongraph.FromEnvironments(envs)).Broken(name); broken {
		s.graphProblem = &problem
	}

	secretName := ""
	claimName := s.env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName
	unstable := s.env.Spec.UnstableConfigurationFields
	switch {
	case claimName != "" && unstable == nil:
		if s.claim, err = framework.OrNil(c.claims.DeploymentTargetClaims(namespace).Get(claimName)); err != nil {
			return s, err
		}
		if s.claim != nil && s.claim.Status.Phase == appstudiov1alpha1.DeploymentTargetClaimPhaseBound {
			candidates, err := c.targetCandidates(s.claim)
			if err != nil {
				return s, err
			}
			if s.target, s.targetProblem = BoundTarget(s.claim, candidates); s.target != nil {
				secretName = s.target.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret
			}
		}
	case claimName == "" && unstable != nil:
		secretName = unstable.KubernetesClusterCredentials.ClusterCredentialsSecret
	}
	if secretName == "" {
		c.sources.release(key)
		return s, nil
	}
	s.secret, err = c.credentialsSecret(ctx, key, namespace, secretName, s.target != nil)
	return s, err
}

// targetCandidates are the DeploymentTargets of claim's namespace that it names or that claim
// it.
func (c *Controller) targetCandidates(claim *appstudiov1alpha1.DeploymentTargetClaim) ([]*appstudiov1alpha1.DeploymentTarget, error) {
	var out []*appstudiov1alpha1.DeploymentTarget
	if claim.Spec.TargetName != "" {
		t, err := framework.OrNil(c.targets.DeploymentTargets(claim.Namespace).Get(claim.Spec.TargetName))
		if err != nil {
			return nil, err
		}
		if t != nil {
			out = append(out, t)
		}
	}
	claiming, err := c.follower.TargetsClaimedBy(claim)
	if err != nil {
		return nil, err
	}
	for _, t := range claiming {
		if t.Name != claim.Spec.TargetName {
			out = append(out, t)
		}
	}
	return out, nil
}

// credentialsSecret is the Secret namespace/name that the Environment key uses, nil when it
// does not exist. The cache has those of the managed-environment type; one that a
// DeploymentTarget names (of another type, to be copied) is watched by name from now on; any
// other is asked of the kube-apiserver.
func (c *Controller) credentialsSecret(ctx context.Context, key, namespace, name string, viaTarget bool) (*corev1.Secret, error) {
	if s, err := c.secrets.Secrets(namespace).Get(name); err == nil || !apierrors.IsNotFound(err) {
		c.sources.release(key)
		return s, err
	}
	if viaTarget {
		if s, synced := c.sources.use(key, namespace, name); synced && s != nil {
			return s, nil
		}
	} else {
		c.sources.release(key)
	}
	return framework.OrNil(c.kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{}))
}

// act carries out p for the Environment of s, recording an Event on it for each write.
func (c *Controller) act(ctx context.Context, s state, p plan) error {
	ns := s.namespace
	if p.deleteCopy {
		if err := c.kube.CoreV1().Secrets(ns).Delete(ctx, s.copy.Name, framework.PreconditionUID(s.copy.UID)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Secret %s/%s: %w", ns, s.copy.Name, err)
		}
		c.event(s.env, corev1.EventTypeNormal, EventSecretCopyDeleted, "Deleted Secret %s, a copy no longer used", s.copy.Name)
	}
	if p.copy != nil {
		secrets := c.kube.CoreV1().Secrets(ns)
		if s.copy == nil {
			if _, err := secrets.Create(ctx, p.copy, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
				return fmt.Errorf("creating Secret %s/%s: %w", ns, p.copy.Name, err)
			}
			c.event(s.env, corev1.EventTypeNormal, EventSecretCopied, "Copied Secret %s into Secret %s of type %s",
				s.secret.Name, p.copy.Name, managedv1alpha1.ManagedEnvironmentSecretType)
		} else {
			if _, err := secrets.Update(ctx, p.copy, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
				return fmt.Errorf("updating Secret %s/%s: %w", ns, p.copy.Name, err)
			}
			c.event(s.env, corev1.EventTypeNormal, EventSecretCopyUpdated, "Updated Secret %s from Secret %s", p.copy.Name, s.secret.Name)
		}
	}
	if p.managedEnvironment != nil {
		mes := c.gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(ns)
		if s.managedEnvironment == nil {
			if _, err := mes.Create(ctx, p.managedEnvironment, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
				return fmt.Errorf("creating GitOpsDeploymentManagedEnvironment %s/%s: %w", ns, p.managedEnvironment.Name, err)
			}
			c.event(s.env, corev1.EventTypeNormal, EventManagedEnvironmentCreated, "Created GitOpsDeploymentManagedEnvironment %s", p.managedEnvironment.Name)
		} else {
			if _, err := mes.Update(ctx, p.managedEnvironment, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
				return fmt.Errorf("updating GitOpsDeploymentManagedEnvironment %s/%s: %w", ns, p.managedEnvironment.Name, err)
			}
			c.event(s.env, corev1.EventTypeNormal, EventManagedEnvironmentUpdated, "Updated GitOpsDeploymentManagedEnvironment %s", p.managedEnvironment.Name)
		}
	}
	if p.deleteManagedEnvironment {
		me := s.managedEnvironment
		err := c.gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(ns).Delete(ctx, me.Name, framework.PreconditionUID(me.UID))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting GitOpsDeploymentManagedEnvironment %s/%s: %w", ns, me.Name, err)
		}
		klog.V(2).InfoS("deleted the ManagedEnvironment of an Environment", "environment", klog.KRef(ns, s.name), "managedEnvironment", me.Name)
		c.event(s.env, corev1.EventTypeNormal, EventManagedEnvironmentDeleted, "Deleted GitOpsDeploymentManagedEnvironment %s", me.Name)
	}
	if p.conditions != nil {
		upd := s.env.DeepCopy()
		upd.Status.Conditions = p.conditions
		_, err := c.gitops.AppStudioV1alpha1().Environments(ns).UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager})
		if apierrors.IsNotFound(err) {
			return nil // its delete event brings the key back
		}
		if err != nil {
			return fmt.Errorf("updating the status of Environment %s/%s: %w", ns, s.name, err)
		}
		if p.problem != nil {
			c.event(s.env, corev1.EventTypeWarning, p.problem.reason, "%s", p.problem.message)
		}
	}
	return nil
}

// event records an Event on env; none once env is gone.
func (c *Controller) event(env *appstudiov1alpha1.Environment, eventType, reason, format string, args ...interface{}) {
	if env != nil {
		c.recorder.Eventf(env, eventType, reason, format, args...)
	}
}
