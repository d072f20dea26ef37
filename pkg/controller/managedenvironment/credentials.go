package managedenvironment

import (
	"fmt"
	"sort"
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// remoteTimeout bounds every request to a ManagedEnvironment's cluster, so that an unreachable
// cluster holds a worker for seconds, not for the TCP timeout.
const remoteTimeout = 15 * time.Second

// connection is the ConnectionInitializationSucceeded condition of a ManagedEnvironment, without
// its timestamps.
type connection struct {
	status  metav1.ConditionStatus
	reason  managedv1alpha1.ManagedEnvironmentConditionReason
	message string
}

func connectionFailed(reason managedv1alpha1.ManagedEnvironmentConditionReason, format string, args ...interface{}) *connection {
	return &connection{status: metav1.ConditionFalse, reason: reason, message: fmt.Sprintf(format, args...)}
}

func connectionUnknown(reason managedv1alpha1.ManagedEnvironmentConditionReason, msg string) *connection {
	return &connection{status: metav1.ConditionUnknown, reason: reason, message: msg}
}

var connectionSucceeded = connection{status: metav1.ConditionTrue, reason: managedv1alpha1.ManagedEnvironmentReasonSucceeded}

// credentials are what the kubeconfig of a ManagedEnvironment gives for its cluster. They are
// only ever held in memory and written into the Argo CD cluster Secret.
type credentials struct {
	context     string
	bearerToken string
	certData    []byte
	keyData     []byte
	caData      []byte
	serverName  string
	insecure    bool
}

// parseCredentials checks a ManagedEnvironment and its Secret as far as that is possible
// without talking to the cluster, in the reference's order (§3.4), and extracts the
// credentials for spec.apiURL.
func parseCredentials(env *managedv1alpha1.GitOpsDeploymentManagedEnvironment, secret *corev1.Secret) (*credentials, *connection) {
	if strings.ContainsAny(env.Spec.APIURL, "?&") {
		// The service appends its own query to tell environments of the same cluster apart.
		return nil, connectionUnknown(managedv1alpha1.ManagedEnvironmentReasonUnsupportedAPIURL, "the API URL must not have ? or & values")
	}
	if string(secret.Type) != managedv1alpha1.ManagedEnvironmentSecretType {
		return nil, connectionFailed(managedv1alpha1.ManagedEnvironmentReasonInvalidSecretType, "invalid secret type: %s", secret.Type)
	}
	raw, ok := secret.Data[managedv1alpha1.ManagedEnvironmentSecretKubeconfigKey]
	if !ok {
		return nil, connectionFailed(managedv1alpha1.ManagedEnvironmentReasonMissingKubeConfigField,
			"missing %s field in Secret", managedv1alpha1.ManagedEnvironmentSecretKubeconfigKey)
	}
	config, err := clientcmd.Load(raw)
	if err != nil {
		return nil, connectionFailed(managedv1alpha1.ManagedEnvironmentReasonUnableToParseKubeconfigData, "unable to parse kubeconfig data: %v", err)
	}
	ctxName, cluster, user, cond := locateContext(config, env.Spec.APIURL)
	if cond != nil {
		return nil, cond
	}
	// The agent's own files and programs are not the tenant's to point at.
	if cluster.CertificateAuthority != "" || user.ClientCertificate != "" || user.ClientKey != "" || user.TokenFile != "" {
		return nil, connectionFailed(managedv1alpha1.ManagedEnvironmentReasonUnableToRetrieveRestConfig,
			"the kubeconfig must carry its certificates and token inline (the *-data fields and token) for context %q: references to files are not supported", ctxName)
	}
	if user.Exec != nil || user.AuthProvider != nil || user.Username != "" || user.Impersonate != "" {
		return nil, connectionFailed(managedv1alpha1.ManagedEnvironmentReasonUnableToRetrieveRestConfig,
			"the user of context %q must authenticate with a token or a client certificate: exec plugins, auth providers, basic auth and impersonation are not supported", ctxName)
	}
	if user.Token == "" && (len(user.ClientCertificateData) == 0 || len(user.ClientKeyData) == 0) {
		return nil, connectionFailed(managedv1alpha1.ManagedEnvironmentReasonUnableToParseKubeconfigData,
			"kubeconfig must have a service account token or a client certificate and key for the user in context %q", ctxName)
	}
	if cond := checkNamespaces(env.Spec.Namespaces); cond != nil {
		return nil, cond
	}
	creds := &credentials{
		context:     ctxName,
		bearerToken: user.Token,
		certData:    user.ClientCertificateData,
		keyData:     user.ClientKeyData,
		caData:      cluster.CertificateAuthorityData,
		serverName:  cluster.TLSServerName,
		insecure:    env.Spec.AllowInsecureSkipTLSVerify || cluster.InsecureSkipTLSVerify,
	}
	if creds.insecure {
		// Verification is off, so a CA would only make client-go refuse the configuration.
		creds.caData = nil
	}
	return creds, nil
}

// locateContext finds the cluster entry whose server is apiURL (case-insensitively, as the
// original), then a context that uses it and the user of that context. Map order is random, so
// names are visited sorted: the same kubeconfig always gives the same context.
func locateContext(config *clientcmdapi.Config, apiURL string) (string, *clientcmdapi.Cluster, *clientcmdapi.AuthInfo, *connection) {
	clusterName := ""
	for _, name := range sortedKeys(config.Clusters) {
		if strings.EqualFold(strings.TrimRight(config.Clusters[name].Server, "/"), strings.TrimRight(apiURL, "/")) {
			clusterName = name
			break
		}
	}
	if clusterName == "" {
		return "", nil, nil, connectionFailed(managedv1alpha1.ManagedEnvironmentReasonUnableToLocateContext,
			"the kubeconfig did not have a cluster entry that matched the API URL '%s'", apiURL)
	}
	for _, name := range sortedKeys(config.Contexts) {
		c := config.Contexts[name]
		if c.Cluster != clusterName {
			continue
		}
		user, ok := config.AuthInfos[c.AuthInfo]
		if !ok {
			return "", nil, nil, connectionFailed(managedv1alpha1.ManagedEnvironmentReasonUnableToParseKubeconfigData,
				"unable to extract remote cluster configuration from kubeconfig, missing auth info for %s", name)
		}
		return name, config.Clusters[clusterName], user, nil
	}
	return "", nil, nil, connectionFailed(managedv1alpha1.ManagedEnvironmentReasonUnableToLocateContext,
		"the kubeconfig did not have a context that matched the cluster specified in the API URL of the "+
			"GitOpsDeploymentManagedEnvironment. Context was expected to reference cluster '%s'", clusterName)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkNamespaces repeats the API's check of spec.namespaces: they end up comma-joined in the
// cluster Secret, so anything but a DNS-1123 label could change its meaning.
func checkNamespaces(namespaces []string) *connection {
	for _, ns := range namespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return connectionUnknown(managedv1alpha1.ManagedEnvironmentReasonInvalidNamespaceList,
				fmt.Sprintf("user specified an invalid namespace '%s': %s", ns, strings.Join(errs, "; ")))
		}
	}
	return nil
}

// restConfig is the client configuration for apiURL with creds, built field by field (not by
// clientcmd) so that nothing in it can make the agent read a file or run a program.
func (c *credentials) restConfig(apiURL string) *rest.Config {
	return &rest.Config{
		Host:        apiURL,
		BearerToken: c.bearerToken,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure:   c.insecure,
			ServerName: c.serverName,
			CertData:   c.certData,
			KeyData:    c.keyData,
			CAData:     c.caData,
		},
		Timeout: remoteTimeout,
		QPS:     5,
		Burst:   10,
	}
}

// clusterConfig is the config of the Argo CD cluster Secret for creds (reference argocd.md §1.6).
func (c *credentials) clusterConfig() argov1alpha1.ClusterConfig {
	return argov1alpha1.ClusterConfig{
		BearerToken: c.bearerToken,
		TLSClientConfig: argov1alpha1.TLSClientConfig{
			Insecure:   c.insecure,
			ServerName: c.serverName,
			CertData:   c.certData,
			KeyData:    c.keyData,
			CAData:     c.caData,
		},
	}
}
