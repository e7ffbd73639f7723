// Package noretry makes the Kubernetes adapter's API calls without
// client-go's own retries.
//
// A client-go request answered 429 or 5xx with a Retry-After header is
// sent again by client-go itself, after sleeping the time the header asks
// (up to 10 times: minutes for a PodDisruptionBudget's or an overloaded
// apiserver's Retry-After). client-go has no setting on rest.Config that
// turns this off for a whole clientset; a request turns it off with
// rest.Request.MaxRetries(0), which the typed clients do not expose. The
// functions here build the same requests through the clientset's REST
// client with MaxRetries(0), so that each call is one HTTP request and its
// error (with the answer's Retry-After, apierrors.SuggestsClientDelay)
// comes back at once: the batch scheduler's cycle and the executor's step
// deal with a failed call by trying again later, never by sleeping.
//
// A clientset without a REST client (client-go's fake clientset, whose
// RESTClient is a nil *rest.RESTClient) is called through its typed
// client instead.
//
// The package reads no clock, keeps no state and starts no goroutines.
package noretry

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// restOf returns c as a REST client to build requests on, or nil when it
// is none (the fake clientset's nil *rest.RESTClient).
func restOf(c rest.Interface) rest.Interface {
	if rc, ok := c.(*rest.RESTClient); c == nil || ok && rc == nil {
		return nil
	}
	return c
}

// Evict posts ev to the Eviction API (policy/v1) of its pod.
func Evict(ctx context.Context, cs kubernetes.Interface, ev *policyv1.Eviction) error {
	rc := restOf(cs.PolicyV1().RESTClient())
	if rc == nil {
		return cs.PolicyV1().Evictions(ev.Namespace).Evict(ctx, ev)
	}
	return rc.Post().AbsPath("/api/v1").Namespace(ev.Namespace).Resource("pods").Name(ev.Name).
		SubResource("eviction").Body(ev).MaxRetries(0).Do(ctx).Error()
}

// Bind posts b to its pod's Binding subresource.
func Bind(ctx context.Context, cs kubernetes.Interface, b *corev1.Binding) error {
	rc := restOf(cs.CoreV1().RESTClient())
	if rc == nil {
		return cs.CoreV1().Pods(b.Namespace).Bind(ctx, b, metav1.CreateOptions{})
	}
	return rc.Post().Namespace(b.Namespace).Resource("pods").Name(b.Name).SubResource("binding").
		VersionedParams(&metav1.CreateOptions{}, scheme.ParameterCodec).Body(b).MaxRetries(0).Do(ctx).Error()
}

// PatchPodStatus patches the status subresource of the pod namespace/name.
func PatchPodStatus(ctx context.Context, cs kubernetes.Interface, namespace, name string, pt types.PatchType, data []byte) error {
	rc := restOf(cs.CoreV1().RESTClient())
	if rc == nil {
		_, err := cs.CoreV1().Pods(namespace).Patch(ctx, name, pt, data, metav1.PatchOptions{}, "status")
		return err
	}
	return rc.Patch(pt).Namespace(namespace).Resource("pods").Name(name).SubResource("status").
		VersionedParams(&metav1.PatchOptions{}, scheme.ParameterCodec).Body(data).MaxRetries(0).Do(ctx).Error()
}

// DeletePod deletes the pod namespace/name with opts.
func DeletePod(ctx context.Context, cs kubernetes.Interface, namespace, name string, opts metav1.DeleteOptions) error {
	rc := restOf(cs.CoreV1().RESTClient())
	if rc == nil {
		return cs.CoreV1().Pods(namespace).Delete(ctx, name, opts)
	}
	return rc.Delete().Namespace(namespace).Resource("pods").Name(name).Body(&opts).MaxRetries(0).Do(ctx).Error()
}

// CreatePod creates pod in namespace.
func CreatePod(ctx context.Context, cs kubernetes.Interface, namespace string, pod *corev1.Pod) error {
	rc := restOf(cs.CoreV1().RESTClient())
	if rc == nil {
		_, err := cs.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
		return err
	}
	return rc.Post().Namespace(namespace).Resource("pods").
		VersionedParams(&metav1.CreateOptions{}, scheme.ParameterCodec).Body(pod).MaxRetries(0).Do(ctx).Error()
}

// GetPod reads the pod namespace/name.
func GetPod(ctx context.Context, cs kubernetes.Interface, namespace, name string) (*corev1.Pod, error) {
	rc := restOf(cs.CoreV1().RESTClient())
	if rc == nil {
		return cs.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	p := &corev1.Pod{}
	err := rc.Get().Namespace(namespace).Resource("pods").Name(name).
		VersionedParams(&metav1.GetOptions{}, scheme.ParameterCodec).MaxRetries(0).Do(ctx).Into(p)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// PatchJob patches a batch/v1 Job (its spec: unsuspending it) in one
// request.
func PatchJob(ctx context.Context, cs kubernetes.Interface, namespace, name string, pt types.PatchType, data []byte) error {
	rc := restOf(cs.BatchV1().RESTClient())
	if rc == nil {
		_, err := cs.BatchV1().Jobs(namespace).Patch(ctx, name, pt, data, metav1.PatchOptions{})
		return err
	}
	return rc.Patch(pt).Namespace(namespace).Resource("jobs").Name(name).
		VersionedParams(&metav1.PatchOptions{}, scheme.ParameterCodec).Body(data).MaxRetries(0).Do(ctx).Error()
}
