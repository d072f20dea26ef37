//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// The local stack runs a real kube-controller-manager, so a Job's Pods are made by the real Job
// controller, but no node and no kubelet: nothing ever schedules or runs them, and they stay
// Pending for ever. playJobPods plays the kubelet for the Pods of one Job: it writes each Pod's
// status as a kubelet writes it when the Pod's one-shot containers have exited (phase Succeeded
// or Failed, every container terminated with exit code 0 or 1, the conditions a kubelet sets on
// a terminated Pod), and leaves it to the real Job controller to count them and to give the Job
// its Complete or Failed condition, as it does on a cluster with nodes.
//
// The Pods are never bound to a Node: kube-apiserver accepts the status of an unscheduled Pod
// (it validates the status, not where it comes from), and the Job controller counts a Pod by its
// phase alone, so the scheduler's part (a binding, the PodScheduled condition) is not needed,
// and no Node object is made that would have to be cleaned up.

// playJobPods plays the kubelet for the Pods of Job job of namespace ns (label
// batch.kubernetes.io/job-name) until the Job has the condition Complete (succeed) or Failed
// (!succeed). A Pod the Job controller makes after a failure (backoffLimit above 0) is played
// as it appears, the same way. It returns early if the Job is deleted after its Pods were
// played (whoever ran it may clean it up as soon as it ended).
func playJobPods(ctx context.Context, ns, job string, succeed bool) {
	GinkgoHelper()
	want := batchv1.JobComplete
	if !succeed {
		want = batchv1.JobFailed
	}
	played := map[string]bool{}
	Eventually(func(g Gomega, ctx context.Context) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
		g.Expect(err).NotTo(HaveOccurred())
		for i := range pods.Items {
			pod := &pods.Items[i]
			if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || pod.DeletionTimestamp != nil {
				continue
			}
			g.Expect(exitPod(ctx, ns, pod.Name, succeed)).To(Succeed(), "the status of Pod %s of Job %s", pod.Name, job)
			played[pod.Name] = true
			GinkgoWriter.Printf("kubelet player: Pod %s/%s of Job %s %s\n", ns, pod.Name, job, map[bool]string{true: "succeeded", false: "failed"}[succeed])
		}
		j, err := kube.BatchV1().Jobs(ns).Get(ctx, job, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && len(played) > 0 {
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(played).NotTo(BeEmpty(), "Job %s has no Pod yet", job)
		g.Expect(j.Status.Conditions).To(ContainElement(And(HaveField("Type", want), HaveField("Status", corev1.ConditionTrue))),
			"Job %s: status %+v", job, j.Status)
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
}

// exitPod writes Pod name's status as the kubelet does once its containers exited: exit code 0
// (phase Succeeded) or 1 (phase Failed).
func exitPod(ctx context.Context, ns, name string, succeed bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		started := metav1.NewTime(now.Add(-time.Second))
		if pod.Status.StartTime == nil {
			pod.Status.StartTime = &started
		}
		phase, exitCode, reason, notReady := corev1.PodSucceeded, int32(0), "Completed", "PodCompleted"
		if !succeed {
			phase, exitCode, reason, notReady = corev1.PodFailed, 1, "Error", "PodFailed"
		}
		pod.Status.Phase = phase
		// As the kubelet sets them on a Pod whose containers all exited: the sandbox is gone,
		// the Pod was initialized (no init containers), and it is not, and will not be, ready.
		initialized := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: started}
		if succeed {
			initialized.Reason = "PodCompleted"
		}
		pod.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse, LastTransitionTime: now},
			initialized,
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: notReady, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: notReady, LastTransitionTime: now},
		}
		pod.Status.ContainerStatuses = nil
		for i, c := range pod.Spec.Containers {
			containerID := fmt.Sprintf("containerd://e2e-%s-%d", pod.UID, i)
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: containerID, Started: new(bool),
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: exitCode, Reason: reason, StartedAt: started, FinishedAt: now, ContainerID: containerID}},
			})
		}
		_, err = kube.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
}
