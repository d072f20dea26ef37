package deploymentrecord

import (
	"context"
	"fmt"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-cd/v2/reposerver/apiclient"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

// argocd-cm's keys that change what the repo-server renders.
const (
	argoCDConfigMap       = "argocd-cm"
	keyInstanceLabelKey   = "application.instanceLabelKey"
	keyTrackingMethod     = "application.resourceTrackingMethod"
	keyKustomizeBuildOpts = "kustomize.buildOptions"
	defaultInstanceLabel  = "app.kubernetes.io/instance"
	repoSecretTypeLabel   = "argocd.argoproj.io/secret-type"
	repoSecretTypeRepo    = "repository"
)

// RepoServer renders a record's manifests with Argo CD's own repo-server, asked as Argo CD's
// application-controller asks it (controller/state.go GetRepoObjs in Argo CD 2.14): the
// deployment's Application (its project, destination, source options) with the record's
// source and commit, the repository's credentials from the repository Secret of the Argo CD
// namespace, and argocd-cm's tracking and kustomize settings. The credentials go to the
// repo-server only; they are never logged nor written anywhere.
type RepoServer struct {
	clients   apiclient.Clientset
	argo      argoclient.Interface
	argoKube  kubernetes.Interface
	namespace string
}

// NewRepoServer asks the repo-server clients reaches; argo and argoKube read Argo CD's
// Application, AppProject, repository Secrets and argocd-cm in namespace.
func NewRepoServer(clients apiclient.Clientset, argo argoclient.Interface, argoKube kubernetes.Interface, namespace string) *RepoServer {
	return &RepoServer{clients: clients, argo: argo, argoKube: argoKube, namespace: namespace}
}

// Manifests implements ManifestSource.
func (s *RepoServer) Manifests(ctx context.Context, d *managedv1alpha1.GitOpsDeployment, rec *managedv1alpha1.DeploymentRecord) ([]string, error) {
	return s.Render(ctx, d, rec.Spec.Source, rec.Spec.Revision)
}

// Render is the manifests of d's Application with src (repository, path, targetRevision) at
// commit, one JSON object a string: what a record's sync deployed, or what a preview of d
// would deploy (pkg/controller/deploymentpreview).
func (s *RepoServer) Render(ctx context.Context, d *managedv1alpha1.GitOpsDeployment, src managedv1alpha1.ApplicationSource, commit string) ([]string, error) {
	app, err := s.argo.ArgoprojV1alpha1().Applications(s.namespace).Get(ctx, argocd.ApplicationName(d.UID), metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the Application: %w", err)
	}
	if app.Spec.Source == nil {
		return nil, fmt.Errorf("the Application %s has no single source", app.Name)
	}
	source := *app.Spec.Source.DeepCopy()
	source.RepoURL, source.Path, source.TargetRevision = src.RepoURL, src.Path, src.TargetRevision

	proj, repo, err := s.permittedRepository(ctx, app, source)
	if err != nil {
		return nil, err
	}
	cm, err := s.argoKube.CoreV1().ConfigMaps(s.namespace).Get(ctx, argoCDConfigMap, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading %s: %w", argoCDConfigMap, err)
	}
	settings := map[string]string{}
	if cm != nil && cm.Data != nil {
		settings = cm.Data
	}
	labelKey := settings[keyInstanceLabelKey]
	if labelKey == "" {
		labelKey = defaultInstanceLabel
	}
	tracking := settings[keyTrackingMethod]
	if tracking == "" {
		tracking = "label" // Argo CD 2.14's default
	}

	closer, client, err := s.clients.NewRepoServerClient()
	if err != nil {
		return nil, fmt.Errorf("connecting to the repo-server: %w", err)
	}
	defer closer.Close()
	resp, err := client.GenerateManifest(ctx, &apiclient.ManifestRequest{
		Repo:               repo,
		Revision:           commit,
		AppLabelKey:        labelKey,
		AppName:            app.InstanceName(s.namespace),
		Namespace:          app.Spec.Destination.Namespace,
		ApplicationSource:  &source,
		KustomizeOptions:   &argov1alpha1.KustomizeOptions{BuildOptions: settings[keyKustomizeBuildOpts]},
		TrackingMethod:     tracking,
		ProjectName:        app.Spec.GetProject(),
		ProjectSourceRepos: proj.Spec.SourceRepos,
		HelmOptions:        &argov1alpha1.HelmOptions{},
		// The revision is a commit: what it renders does not change, the cache may serve it.
	})
	if err != nil {
		return nil, fmt.Errorf("rendering %s at %s: %w", source.RepoURL, commit, err)
	}
	return resp.Manifests, nil
}

// permittedRepository is the AppProject of app and the Repository of source, once the project
// permits source. As Argo CD's controller, ask only for what the project lets the Application
// read: the repo-server shares one clone per repository, and a commit asked for by SHA needs no
// credentials once it is there (pkg/controller/argocd: RepositoryAllowed).
func (s *RepoServer) permittedRepository(ctx context.Context, app *argov1alpha1.Application, source argov1alpha1.ApplicationSource) (*argov1alpha1.AppProject, *argov1alpha1.Repository, error) {
	proj, err := s.argo.ArgoprojV1alpha1().AppProjects(s.namespace).Get(ctx, app.Spec.GetProject(), metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("reading the AppProject: %w", err)
	}
	if !proj.IsSourcePermitted(source) {
		return nil, nil, fmt.Errorf("the AppProject %s does not permit the repository %s", proj.Name, source.RepoURL)
	}
	repo, err := s.repository(ctx, source.RepoURL, app.Spec.GetProject())
	if err != nil {
		return nil, nil, err
	}
	return proj, repo, nil
}

// ResolveRevision resolves the deployment's own spec.source.targetRevision (a branch, a tag,
// HEAD when empty) to the commit it names now, with the repo-server's ResolveRevision as Argo
// CD's API server calls it: the deployment's Application (for its source kind), its
// repository's credentials, after the AppProject's source check. It asks git every time
// (ls-remote, no cache), so a new commit is seen as soon as it is pushed.
func (s *RepoServer) ResolveRevision(ctx context.Context, d *managedv1alpha1.GitOpsDeployment) (string, error) {
	return s.ResolveRef(ctx, d, d.Spec.Source.TargetRevision)
}

// ResolveRef resolves ref (a branch, a tag, a commit; HEAD when empty) of d's repository to
// the commit it names now, as ResolveRevision does for d's own targetRevision.
func (s *RepoServer) ResolveRef(ctx context.Context, d *managedv1alpha1.GitOpsDeployment, ref string) (string, error) {
	app, err := s.argo.ArgoprojV1alpha1().Applications(s.namespace).Get(ctx, argocd.ApplicationName(d.UID), metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the Application: %w", err)
	}
	if app.Spec.Source == nil {
		return "", fmt.Errorf("the Application %s has no single source", app.Name)
	}
	app = app.DeepCopy()
	// The Application is at the hold's revision; the question is about the deployment's own.
	app.Spec.Source.RepoURL, app.Spec.Source.TargetRevision = d.Spec.Source.RepoURL, ref
	_, repo, err := s.permittedRepository(ctx, app, *app.Spec.Source)
	if err != nil {
		return "", err
	}
	rev := ref
	if rev == "" {
		rev = "HEAD"
	}
	closer, client, err := s.clients.NewRepoServerClient()
	if err != nil {
		return "", fmt.Errorf("connecting to the repo-server: %w", err)
	}
	defer closer.Close()
	resp, err := client.ResolveRevision(ctx, &apiclient.ResolveRevisionRequest{Repo: repo, App: app, AmbiguousRevision: rev})
	if err != nil {
		return "", fmt.Errorf("resolving %s of %s: %w", rev, d.Spec.Source.RepoURL, err)
	}
	return resp.Revision, nil
}

// repository is the Repository of repoURL as Argo CD reads it from its repository Secret (the
// one of project, or else a global one), or the bare URL when there is none (a public
// repository).
func (s *RepoServer) repository(ctx context.Context, repoURL, project string) (*argov1alpha1.Repository, error) {
	list, err := s.argoKube.CoreV1().Secrets(s.namespace).List(ctx, metav1.ListOptions{LabelSelector: repoSecretTypeLabel + "=" + repoSecretTypeRepo})
	if err != nil {
		return nil, fmt.Errorf("listing the repository Secrets: %w", err)
	}
	var best *corev1.Secret
	for i := range list.Items {
		sec := &list.Items[i]
		url := string(sec.Data["url"])
		if url != repoURL && argocd.RepositoryKey(url) != argocd.RepositoryKey(repoURL) {
			continue
		}
		switch p := string(sec.Data["project"]); {
		case p == project:
			best = sec
		case p == "" && (best == nil || string(best.Data["project"]) != project):
			best = sec
		}
	}
	if best == nil {
		return &argov1alpha1.Repository{Repo: repoURL}, nil
	}
	return repositoryOfSecret(best, repoURL), nil
}

// repositoryOfSecret reads a repository Secret as Argo CD's util/db does (the fields the
// agent's repository Secrets and an operator's may set).
func repositoryOfSecret(sec *corev1.Secret, repoURL string) *argov1alpha1.Repository {
	str := func(k string) string { return string(sec.Data[k]) }
	yes := func(k string) bool { return strings.EqualFold(str(k), "true") }
	return &argov1alpha1.Repository{
		Repo: repoURL, Name: str("name"), Type: str("type"), Project: str("project"),
		Username: str("username"), Password: str("password"), SSHPrivateKey: str("sshPrivateKey"),
		TLSClientCertData: str("tlsClientCertData"), TLSClientCertKey: str("tlsClientCertKey"),
		Proxy: str("proxy"), NoProxy: str("noProxy"),
		Insecure: yes("insecure"), InsecureIgnoreHostKey: yes("insecureIgnoreHostKey"), EnableLFS: yes("enableLfs"),
		EnableOCI: yes("enableOCI"), ForceHttpBasicAuth: yes("forceHttpBasicAuth"),
	}
}
