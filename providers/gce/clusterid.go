package gce

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// The upstream GCE CCM names the cluster's shared load balancer parts (the
// node health check "k8s-<id>-node" and its firewall rule) after a cluster
// ID it keeps in the ConfigMap kube-system/ingress-uid, key "uid" (creating
// it with a random ID when missing; cloud-provider-gcp
// providers/gce/gce_clusterid.go:43-53, 170-210). A cluster switched from
// it has that ConfigMap: its ID names the shared parts here too, so they
// are found and kept, not made twice. Without it the shared parts are
// named after clusterID, as before.
const (
	clusterIDNamespace = "kube-system"
	clusterIDConfigMap = "ingress-uid"
	clusterIDKey       = "uid"
)

// readSharedID reads the upstream cluster ID; "" when there is none. It
// tries for up to a minute on errors other than "not found": naming the
// shared parts after the wrong ID would make them twice.
func readSharedID(ctx context.Context, client kubernetes.Interface) string {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		cm, err := client.CoreV1().ConfigMaps(clusterIDNamespace).Get(ctx, clusterIDConfigMap, metav1.GetOptions{})
		switch {
		case err == nil:
			return cm.Data[clusterIDKey]
		case apierrors.IsNotFound(err):
			return ""
		}
		klog.FromContext(ctx).Error(err, "Reading the upstream GCE cluster ID", "configMap", clusterIDNamespace+"/"+clusterIDConfigMap)
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(2 * time.Second):
		}
	}
}
