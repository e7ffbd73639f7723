// Command batch runs Flotilla's batch scheduler (package
// github.com/flotilla-sched/flotilla/kube/batch) against one cluster:
// pods with spec.schedulerName "flotilla" (see -scheduler-name) are
// scheduled by Flotilla's fair share, gangs and preemption. See README.md
// beside this file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-sched/flotilla/kube/batch"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file; empty means in-cluster")
	name := flag.String("scheduler-name", batch.DefaultSchedulerName, "spec.schedulerName of the pods to schedule")
	config := flag.String("config", "", "queue configuration file (the config, queues and priorityClasses blocks of a scenario file); empty means defaults")
	period := flag.Duration("period", time.Second, "time between scheduling cycles")
	leNamespace := flag.String("leader-elect-namespace", "", "namespace of the leader-election Lease; empty means no leader election")
	leName := flag.String("leader-elect-name", "flotilla-batch", "name of the leader-election Lease")
	id := flag.String("id", "", "this replica's identity for leader election; empty means the host name")
	admit := flag.Bool("admit-suspended", true, "admit suspended Jobs, JobSets, PyTorchJobs, MPIJobs and RayJobs with a queue label by unsuspending them once their pods fit whole (needs list/watch/patch on them)")
	flag.Parse()

	var cfg batch.Config
	if *config != "" {
		data, err := os.ReadFile(*config)
		if err != nil {
			return err
		}
		if cfg, err = batch.ParseConfig(data); err != nil {
			return fmt.Errorf("%s: %w", *config, err)
		}
	}
	cfg.SchedulerName, cfg.Period, cfg.AdmitSuspended = *name, *period, *admit

	var rc *rest.Config
	var err error
	if *kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 5000, 10000 // binding throughput is the apiserver's
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	// Owners (Jobs, JobSets, training jobs) and Kueue's priority
	// classes are read through the dynamic client.
	if cfg.Dynamic, err = dynamic.NewForConfig(rc); err != nil {
		return err
	}
	s, err := batch.New(client, cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := s.Start(ctx); err != nil {
		return err
	}
	onError := func(err error) { log.Printf("cycle: %v", err) }
	if *leNamespace == "" {
		err = s.Run(ctx, onError)
	} else {
		if *id == "" {
			if *id, err = os.Hostname(); err != nil {
				return err
			}
		}
		err = s.RunWithLeaderElection(ctx, batch.LeaderElection{Namespace: *leNamespace, Name: *leName, Identity: *id}, onError)
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
