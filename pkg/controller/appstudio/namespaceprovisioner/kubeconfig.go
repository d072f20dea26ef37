package namespaceprovisioner

import (
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigName names the cluster, user and context of the kubeconfigs.
const kubeconfigName = "deployment-target"

// buildKubeconfig is a kubeconfig for the ServiceAccount's token on cfg's server, with the
// namespace as its context's default. TLS is always verified, with cfg's CA.
func buildKubeconfig(cfg config, namespace, token string) ([]byte, error) {
	c := clientcmdapi.NewConfig()
	c.Clusters[kubeconfigName] = &clientcmdapi.Cluster{Server: cfg.server, CertificateAuthorityData: cfg.ca}
	c.AuthInfos[kubeconfigName] = &clientcmdapi.AuthInfo{Token: token}
	c.Contexts[kubeconfigName] = &clientcmdapi.Context{Cluster: kubeconfigName, AuthInfo: kubeconfigName, Namespace: namespace}
	c.CurrentContext = kubeconfigName
	return clientcmd.Write(*c)
}
