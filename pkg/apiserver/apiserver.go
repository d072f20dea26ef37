// Package apiserver assembles the GitOps Service's aggregated API server: both API groups,
// their PostgreSQL storage, authorization of the internal kinds, OpenAPI and health checks.
package apiserver

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/appstudio/application"
	"github.com/gitops-service/gitops-service/pkg/registry/appstudio/component"
	"github.com/gitops-service/gitops-service/pkg/registry/appstudio/componentdetectionquery"
	"github.com/gitops-service/gitops-service/pkg/registry/appstudio/deploymenttarget"
	"github.com/gitops-service/gitops-service/pkg/registry/appstudio/deploymenttargetclaim"
	"github.com/gitops-service/gitops-service/pkg/registry/appstudio/deploymenttargetclass"
	"github.com/gitops-service/gitops-service/pkg/registry/appstudio/environment"
	"github.com/gitops-service/gitops-service/pkg/registry/appstudio/environmenthold"
	"github.com/gitops-service/gitops-service/pkg/registry/appstudio/promotionapproval"
	"github.com/gitops-service/gitops-service/pkg/registry/appstudio/promotiongate"
	"github.com/gitops-service/gitops-service/pkg/registry/appstudio/promotionrun"
	"github.com/gitops-service/gitops-service/pkg/registry/appstudio/snapshot"
	"github.com/gitops-service/gitops-service/pkg/registry/appstudio/snapshotenvironmentbinding"
	"github.com/gitops-service/gitops-service/pkg/registry/fleetidentity"
	"github.com/gitops-service/gitops-service/pkg/registry/managedgitops/argocdinstance"
	"github.com/gitops-service/gitops-service/pkg/registry/managedgitops/auditentry"
	"github.com/gitops-service/gitops-service/pkg/registry/managedgitops/deploymentpreview"
	"github.com/gitops-service/gitops-service/pkg/registry/managedgitops/deploymentrecord"
	"github.com/gitops-service/gitops-service/pkg/registry/managedgitops/gitopsdeployment"
	"github.com/gitops-service/gitops-service/pkg/registry/managedgitops/gitopsdeploymenthold"
	"github.com/gitops-service/gitops-service/pkg/registry/managedgitops/gitopsdeploymentmanagedenvironment"
	"github.com/gitops-service/gitops-service/pkg/registry/managedgitops/gitopsdeploymentrepositorycredential"
	"github.com/gitops-service/gitops-service/pkg/registry/managedgitops/gitopsdeploymentsyncrun"
	"github.com/gitops-service/gitops-service/pkg/registry/managedgitops/operation"
	"github.com/gitops-service/gitops-service/pkg/registry/managedgitops/tenantplacement"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// ExtraConfig is what the server needs beyond the generic apiserver configuration.
type ExtraConfig struct {
	Validation validation.Options
	// Agents are the users that are the agents of the fleet's instances, each confined to its
	// own instance's status and tenants.
	Agents fleetidentity.Agents
	// MaxClaimsPerNamespace is the most DeploymentTargetClaims a namespace may hold when the
	// claim's class sets no maxClaimsPerNamespace; 0 for no limit.
	MaxClaimsPerNamespace int64
	// DeploymentRecordsPerDeployment is how many DeploymentRecords of a GitOpsDeployment the
	// server keeps when its spec.revisionHistoryLimit is unset.
	DeploymentRecordsPerDeployment int32
}

// Config is the configuration of the server.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
	ExtraConfig   ExtraConfig
}

// CompletedConfig is a Config that Complete has filled in.
type CompletedConfig struct {
	genericConfig genericapiserver.CompletedConfig
	extraConfig   *ExtraConfig
}

// Complete fills in defaults.
func (c *Config) Complete() CompletedConfig {
	return CompletedConfig{genericConfig: c.GenericConfig.Complete(), extraConfig: &c.ExtraConfig}
}

// Server is the running GitOps API server.
type Server struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
}

// New builds the server with both API groups installed.
func (c CompletedConfig) New() (*Server, error) {
	server, err := c.genericConfig.New("gitops-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	// The host cluster's namespaces, from the server's informers (started and awaited by
	// readyz with the server): which namespaces the provisioner made. None without the core API.
	var namespaces corelisters.NamespaceLister
	if f := c.genericConfig.SharedInformerFactory; f != nil {
		namespaces = f.Core().V1().Namespaces().Lister()
	}
	// The server's authorizer (the host cluster's RBAC, through SubjectAccessReviews) also
	// decides who may approve a promotion: the verbs approve and override on the Environment.
	storage, err := resourceStorage(c.genericConfig.RESTOptionsGetter, *c.extraConfig, namespaces, c.genericConfig.Authorization.Authorizer)
	if err != nil {
		return nil, err
	}
	gitopsGroup := genericapiserver.NewDefaultAPIGroupInfo(gitops.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	gitopsGroup.VersionedResourcesStorageMap["v1alpha1"] = storage[gitops.GroupName]
	appstudioGroup := genericapiserver.NewDefaultAPIGroupInfo(appstudio.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	appstudioGroup.VersionedResourcesStorageMap["v1alpha1"] = storage[appstudio.GroupName]
	gitopsGroup.NegotiatedSerializer, appstudioGroup.NegotiatedSerializer = apiSerializer, apiSerializer

	if err := server.InstallAPIGroups(&gitopsGroup, &appstudioGroup); err != nil {
		return nil, fmt.Errorf("installing API groups: %w", err)
	}
	return &Server{GenericAPIServer: server}, nil
}

// resourceStorage builds the storage of every resource, by group and resource name. authz
// admits PromotionApprovals (nil: every one).
func resourceStorage(optsGetter generic.RESTOptionsGetter, extra ExtraConfig, namespaces corelisters.NamespaceLister,
	authz authorizer.Authorizer) (map[string]map[string]rest.Storage, error) {
	opts, agents := extra.Validation, extra.Agents
	gitopsStorage, err := resources(map[string]newREST{
		"gitopsdeployments": func(g generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
			return gitopsdeployment.NewREST(Scheme, g, opts)
		},
		"gitopsdeploymentsyncruns":              bind(gitopsdeploymentsyncrun.NewREST),
		"gitopsdeploymentmanagedenvironments":   bind(gitopsdeploymentmanagedenvironment.NewREST),
		"gitopsdeploymentrepositorycredentials": bind(gitopsdeploymentrepositorycredential.NewREST),
		"operations":                            bind(operation.NewREST),
		"deploymentrecords":                     bind(deploymentrecord.NewREST),
		"gitopsdeploymentholds":                 bind(gitopsdeploymenthold.NewREST),
		"deploymentpreviews":                    bind(deploymentpreview.NewREST),
		"argocdinstances": func(g generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
			return argocdinstance.NewREST(Scheme, g, agents)
		},
		"tenantplacements": func(g generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
			return tenantplacement.NewREST(Scheme, g, agents)
		},
	}, optsGetter)
	if err != nil {
		return nil, err
	}
	gitopsStorage["deploymentrecords"] = deploymentrecord.WithRetention(gitopsStorage["deploymentrecords"].(*store.REST),
		gitopsStorage["gitopsdeployments"].(rest.Getter), extra.DeploymentRecordsPerDeployment)
	gitopsStorage["deploymentrecords/diff"] = deploymentrecord.NewDiffREST(gitopsStorage["deploymentrecords"].(rest.Getter))
	gitopsStorage["deploymentpreviews/diff"] = deploymentpreview.NewDiffREST(gitopsStorage["deploymentpreviews"].(rest.Getter),
		gitopsStorage["deploymentrecords"].(rest.Getter))
	// Read-only: the storage writes the entries, in each audited write's transaction.
	if gitopsStorage["auditentries"], err = auditentry.NewREST(Scheme, optsGetter); err != nil {
		return nil, err
	}
	appstudioStorage, err := resources(map[string]newREST{
		"environments":                bind(environment.NewREST),
		"snapshots":                   bind(snapshot.NewREST),
		"snapshotenvironmentbindings": bind(snapshotenvironmentbinding.NewREST),
		"promotionruns":               bind(promotionrun.NewREST),
		"deploymenttargets":           bind(deploymenttarget.NewREST),
		"deploymenttargetclaims":      bind(deploymenttargetclaim.NewREST),
		"deploymenttargetclasses":     bind(deploymenttargetclass.NewREST),
		// Kinds of our own beyond application-api, linked to their Environment by name.
		"promotiongates":     bind(promotiongate.NewREST),
		"promotionapprovals": bind(promotionapproval.NewREST),
		"environmentholds":   bind(environmenthold.NewREST),
		// application-service's kinds: an APIService owns its whole group/version, so their
		// CRDs cannot be installed beside this server.
		"applications":              bind(application.NewREST),
		"components":                bind(component.NewREST),
		"componentdetectionqueries": bind(componentdetectionquery.NewREST),
	}, optsGetter)
	if err != nil {
		return nil, err
	}
	appstudioStorage["deploymenttargetclaims"] = deploymenttargetclaim.WithLimit(appstudioStorage["deploymenttargetclaims"].(*store.REST),
		appstudioStorage["deploymenttargetclasses"].(rest.Getter), extra.MaxClaimsPerNamespace, namespaces)
	appstudioStorage["promotionapprovals"] = promotionapproval.WithAuthorization(appstudioStorage["promotionapprovals"].(*store.REST),
		appstudioStorage["promotionruns"].(rest.Getter), appstudioStorage["environments"].(rest.Getter), authz)
	return map[string]map[string]rest.Storage{gitops.GroupName: gitopsStorage, appstudio.GroupName: appstudioStorage}, nil
}

type newREST func(generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error)

// bind adapts a registry's NewREST to this server's scheme.
func bind(f func(typer runtime.ObjectTyper, g generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error)) newREST {
	return func(g generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) { return f(Scheme, g) }
}

// resources builds the storage of each resource and of its /status.
func resources(defs map[string]newREST, optsGetter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	storage := map[string]rest.Storage{}
	for name, newFn := range defs {
		main, status, err := newFn(optsGetter)
		if err != nil {
			return nil, err
		}
		storage[name] = main
		if status != nil {
			storage[name+"/status"] = status
		}
	}
	return storage, nil
}
