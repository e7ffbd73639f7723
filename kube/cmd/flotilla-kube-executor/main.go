// Command flotilla-kube-executor is the executor of `flotilla serve` for a
// real Kubernetes cluster: it reports the cluster's nodes and Flotilla
// pods to the service, creates a pod for every lease it is given, deletes
// the pods the service cancels or preempts, and reports the pods' phases.
// See kube/executor/README.md.
//
//	flotilla-kube-executor -cluster NAME [-server URL] [-token T]
//	    [-kubeconfig FILE] [-namespace default] [-node-selector SELECTOR]
//	    [-resources cpu,memory,nvidia.com/gpu] [-pod-template FILE]
//	    [-keep 0] [-renew 5s]
//
// Exit codes: 0 stopped by SIGTERM or SIGINT, 1 the cluster or the
// service could not be reached at start, 2 bad flags or files.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/client"
	"github.com/flotilla-sched/flotilla/kube/executor"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// options are the command's flags, checked.
type options struct {
	cfg        executor.Config
	server     string
	token      string
	kubeconfig string
}

// parseFlags reads the flags and the pod template; every problem is
// reported, joined.
func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("flotilla-kube-executor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	fs.StringVar(&o.cfg.Cluster, "cluster", "", "the cluster's name at the service (required; it labels the cluster's pods)")
	fs.StringVar(&o.cfg.Pool, "pool", "", "the cluster's pool at the service (default \"default\"): each pool has its own fair shares and cycle; the service checks the name")
	fs.StringVar(&o.server, "server", envOr("FLOTILLA_SERVER", "http://127.0.0.1:8080"), "the service's URL")
	fs.StringVar(&o.token, "token", os.Getenv("FLOTILLA_TOKEN"), "the service's bearer token (an executor token for the cluster)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file (empty: ~/.kube/config, else in-cluster)")
	fs.StringVar(&o.cfg.Namespace, "namespace", executor.DefaultNamespace, "the namespace of the jobs' pods")
	sel := fs.String("node-selector", "", "a label selector picking the cluster's nodes (empty: every node)")
	res := fs.String("resources", "cpu,memory,"+api.DefaultGPUResource, "the resources reported: the service's resources, comma-separated")
	tmpl := fs.String("pod-template", "", "a Pod, YAML or JSON, whose first container runs the job (default: busybox sleeping for the job's runtime)")
	fs.IntVar(&o.cfg.Keep, "keep", 0, "how many ended pods to keep for debugging (the most recent)")
	fs.DurationVar(&o.cfg.Renew, "renew", executor.DefaultRenew, "how often to report (and so renew leases): well under the lease timeout")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	var errs []error
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if o.cfg.Renew <= 0 {
		errs = append(errs, flotilla.Errorf("renew", o.cfg.Renew.String(), flotilla.ErrOutOfRange, "want a positive duration"))
	}
	if *sel != "" {
		s, err := labels.Parse(*sel)
		if err != nil {
			errs = append(errs, flotilla.Errorf("node-selector", *sel, flotilla.ErrMalformed, "%v", err))
		}
		o.cfg.NodeSelector = s
	}
	for _, r := range strings.Split(*res, ",") {
		if r = strings.TrimSpace(r); r != "" {
			o.cfg.Resources = append(o.cfg.Resources, r)
		}
	}
	if len(o.cfg.Resources) == 0 {
		errs = append(errs, flotilla.Errorf("resources", *res, flotilla.ErrRequired, "name the service's resources"))
	}
	if *tmpl != "" {
		data, err := os.ReadFile(*tmpl)
		if err == nil {
			o.cfg.Template, err = executor.ParsePodTemplate(data)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("-pod-template %s: %w", *tmpl, err))
		}
	}
	return o, errors.Join(errs...)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// run is the command: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "flotilla-kube-executor: %v\n", err)
		return 2
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		fmt.Fprintf(stderr, "flotilla-kube-executor: kubeconfig: %v\n", err)
		return 2
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		fmt.Fprintf(stderr, "flotilla-kube-executor: %v\n", err)
		return 2
	}
	svc, err := client.New(o.server, o.token, nil)
	if err != nil {
		fmt.Fprintf(stderr, "flotilla-kube-executor: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	factory := informers.NewSharedInformerFactory(kube, 0)
	o.cfg.Kube, o.cfg.Service, o.cfg.Lister = kube, svc, executor.NewInformerLister(factory)
	ex, err := executor.New(o.cfg)
	if err != nil {
		fmt.Fprintf(stderr, "flotilla-kube-executor: %v\n", err)
		return 2
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			fmt.Fprintf(stderr, "flotilla-kube-executor: the %v cache did not sync\n", typ)
			return 1
		}
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil)).With("cluster", o.cfg.Cluster)
	fmt.Fprintf(stdout, "executor %s: reporting to %s every %s\n", o.cfg.Cluster, o.server, o.cfg.Renew)
	_ = ex.Run(ctx, func(err error) { log.Warn("report failed", "err", err) })
	log.Info("stopped", "held", len(ex.Held()), "succeeded", ex.Finished(api.PhaseSucceeded),
		"failed", ex.Finished(api.PhaseFailed), "returned", ex.Finished(api.PhaseReturned),
		"stopped", ex.Finished(api.PhaseStopped))
	return 0
}
