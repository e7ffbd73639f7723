package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/client"
	"github.com/flotilla-sched/flotilla/events"
)

// The queue and group commands: the queue tree's nodes (docs/queue-tree.md).

// treeFlags are the definition flags queue and group share.
type treeFlags struct {
	parent                        *string
	factor                        *float64
	guaranteed, limit, lendingLim *string
	// retryPolicy is a queue's -retry-policy FILE (nil for a group).
	retryPolicy *string
}

func addTreeFlags(fs *flag.FlagSet, kind string) treeFlags {
	var retry *string
	if kind == "queue" {
		retry = fs.String("retry-policy", "", "a JSON file of the queue's retry policy, docs/operator-commands.md (maxAttempts and rules); on update, an empty name removes it")
	}
	return treeFlags{
		retryPolicy: retry,
		parent:      fs.String("parent", "", "the group the "+kind+" hangs from (empty: the root)"),
		factor:      fs.Float64("priority-factor", 0, "priority factor: the weight among siblings is 1/factor; 0 means 1"),
		guaranteed:  fs.String("guaranteed", "", "what the "+kind+" may always claim: resource=quantity,… (cpu=16,nvidia.com/gpu=4)"),
		limit:       fs.String("limit", "", "what the "+kind+" may hold at most: resource=quantity,…"),
		lendingLim:  fs.String("lending-limit", "", "how much of its idle guarantee others may borrow: resource=quantity,…"),
	}
}

// parseQuota reads a -guaranteed, -limit or -lending-limit value:
// comma-separated resource=quantity pairs; "" gives none. The quantities
// are the service's to check (400 naming the field and value).
func parseQuota(flagName, v string) (map[string]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	out := map[string]string{}
	for pair := range strings.SplitSeq(v, ",") {
		name, q, ok := strings.Cut(strings.TrimSpace(pair), "=")
		name, q = strings.TrimSpace(name), strings.TrimSpace(q)
		switch _, dup := out[name]; {
		case !ok || name == "" || q == "":
			return nil, fmt.Errorf("-%s %q: %q is not resource=quantity (want e.g. cpu=16,nvidia.com/gpu=4)", flagName, v, pair)
		case dup:
			return nil, fmt.Errorf("-%s %q: resource %q given twice", flagName, v, name)
		}
		out[name] = q
	}
	return out, nil
}

// node is what queue and group definitions share on the wire.
type node struct {
	parent                        *string
	factor                        *float64
	guaranteed, limit, lendingLim *map[string]string
}

// apply sets the fields whose flags were given on the command line (all
// of them on create), reporting a bad quota flag.
func (f treeFlags) apply(fs *flag.FlagSet, all bool, n node) error {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if all || set["parent"] {
		*n.parent = *f.parent
	}
	if all || set["priority-factor"] {
		*n.factor = *f.factor
	}
	for _, q := range []struct {
		name string
		v    *string
		dst  *map[string]string
	}{{"guaranteed", f.guaranteed, n.guaranteed}, {"limit", f.limit, n.limit}, {"lending-limit", f.lendingLim, n.lendingLim}} {
		if !all && !set[q.name] {
			continue
		}
		m, err := parseQuota(q.name, *q.v)
		if err != nil {
			return err
		}
		*q.dst = m
	}
	return nil
}

// applyRetryPolicy sets q's retry policy from -retry-policy FILE when
// the flag was given: the file's policy, or none for an empty name. The
// file must hold one JSON object of the policy's fields; the service
// checks the policy's values with the queue's.
func (f treeFlags) applyRetryPolicy(fs *flag.FlagSet, q *api.Queue) error {
	given := false
	fs.Visit(func(fl *flag.Flag) { given = given || fl.Name == "retry-policy" })
	if !given || f.retryPolicy == nil {
		return nil
	}
	if strings.TrimSpace(*f.retryPolicy) == "" {
		q.RetryPolicy = nil
		return nil
	}
	data, err := os.ReadFile(*f.retryPolicy)
	if err != nil {
		return fmt.Errorf("-retry-policy: %w", err)
	}
	p, err := events.DecodeRetryPolicy("retryPolicy", data)
	if err != nil {
		return fmt.Errorf("-retry-policy %s: %w", *f.retryPolicy, err)
	}
	q.RetryPolicy = p
	return nil
}

func queueNode(q *api.Queue) node {
	return node{&q.Parent, &q.PriorityFactor, &q.Guaranteed, &q.Limit, &q.LendingLimit}
}

func groupNode(g *api.Group) node {
	return node{&g.Parent, &g.PriorityFactor, &g.Guaranteed, &g.Limit, &g.LendingLimit}
}

// treeCmd is what queue and group commands share: flags, output and
// client, then the subcommand (args[0]) with its positional arguments.
func treeCmd(ctx context.Context, kind string, args []string, stdout, stderr io.Writer,
	do func(c cmdIO, cl *client.Client, fs *flag.FlagSet, tf treeFlags, pos []string, asJSON bool) int) int {
	c := cmdIO{kind, stdout, stderr}
	if len(args) == 0 {
		return c.usage("want create NAME, update NAME, list or delete NAME")
	}
	if isHelp(args[0]) {
		fs := flag.NewFlagSet(kind, flag.ContinueOnError)
		fs.SetOutput(stderr)
		addClientFlags(fs)
		addTreeFlags(fs, kind)
		outputFlag(fs)
		more := ""
		if kind == "queue" {
			more = " | cordon NAME | uncordon NAME"
		}
		fmt.Fprintf(stderr, "usage: flotilla %s create NAME [flags] | update NAME [flags] | list [-o json] | delete NAME%s\n"+
			"  (docs/queue-tree.md: the queue tree's fields)\n", kind, more)
		fs.PrintDefaults()
		return 0
	}
	fs := flag.NewFlagSet(kind+" "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addClientFlags(fs)
	tf := addTreeFlags(fs, kind)
	out := outputFlag(fs)
	pos, err := parse(fs, args[1:])
	if err != nil {
		return flagExit(err)
	}
	asJSON, code := checkOutput(c, *out)
	if code != 0 {
		return code
	}
	switch args[0] {
	case "create", "update", "delete":
		if len(pos) != 1 {
			return c.usage("%s takes one %s name", args[0], kind)
		}
	case "list":
		if len(pos) != 0 {
			return c.usage("list takes no arguments")
		}
	default:
		return c.usage("unknown subcommand %q: want create, update, list or delete", args[0])
	}
	cl, err := cf.client()
	if err != nil {
		return c.usage("%v", err)
	}
	return do(c, cl, fs, tf, pos, asJSON)
}

func queueCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "cordon" || args[0] == "uncordon") {
		return cordonCmd(ctx, "queue", args, stdout, stderr)
	}
	return treeCmd(ctx, "queue", args, stdout, stderr, func(c cmdIO, cl *client.Client, fs *flag.FlagSet, tf treeFlags, pos []string, asJSON bool) int {
		var q api.Queue
		var err error
		switch args[0] {
		case "create", "update":
			if args[0] == "update" {
				if q, err = cl.Queue(ctx, pos[0]); err != nil {
					return c.fail(err)
				}
				q.Status = nil
			}
			q.Name = pos[0]
			if err := tf.apply(fs, args[0] == "create", queueNode(&q)); err != nil {
				return c.usage("%v", err)
			}
			if err := tf.applyRetryPolicy(fs, &q); err != nil {
				return c.usage("%v", err)
			}
			if args[0] == "create" {
				q, err = cl.CreateQueue(ctx, q)
			} else {
				q, err = cl.UpdateQueue(ctx, q)
			}
			if err != nil {
				return c.fail(err)
			}
			if asJSON {
				return writeJSONLine(c, q)
			}
			fmt.Fprintf(c.stdout, "queue %s %sd\n", q.Name, args[0])
		case "list":
			return listTree(ctx, c, cl, asJSON, true)
		case "delete":
			if err := cl.DeleteQueue(ctx, pos[0]); err != nil {
				return c.fail(err)
			}
			if !asJSON {
				fmt.Fprintf(c.stdout, "queue %s deleted\n", pos[0])
			}
		}
		return 0
	})
}

func groupCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return treeCmd(ctx, "group", args, stdout, stderr, func(c cmdIO, cl *client.Client, fs *flag.FlagSet, tf treeFlags, pos []string, asJSON bool) int {
		var g api.Group
		var err error
		switch args[0] {
		case "create", "update":
			if args[0] == "update" {
				if g, err = cl.Group(ctx, pos[0]); err != nil {
					return c.fail(err)
				}
				g.Status = nil
			}
			g.Name = pos[0]
			if err := tf.apply(fs, args[0] == "create", groupNode(&g)); err != nil {
				return c.usage("%v", err)
			}
			if args[0] == "create" {
				g, err = cl.CreateGroup(ctx, g)
			} else {
				g, err = cl.UpdateGroup(ctx, g)
			}
			if err != nil {
				return c.fail(err)
			}
			if asJSON {
				return writeJSONLine(c, g)
			}
			fmt.Fprintf(c.stdout, "group %s %sd\n", g.Name, args[0])
		case "list":
			return listTree(ctx, c, cl, asJSON, false)
		case "delete":
			if err := cl.DeleteGroup(ctx, pos[0]); err != nil {
				return c.fail(err)
			}
			if !asJSON {
				fmt.Fprintf(c.stdout, "group %s deleted\n", pos[0])
			}
		}
		return 0
	})
}

// treeLine is one node of the tree as listed.
type treeLine struct {
	name, parent string
	group        bool
	q            *api.Queue
	g            *api.Group
}

// listTree prints the queues (queues) or the groups: with -o json the
// list as the API gives it; for people, the tree depth first, each name
// indented by its depth, with its shares from the last cycle. The queue
// list shows the groups too (their names end in /), the group list the
// groups only, with their quotas.
func listTree(ctx context.Context, c cmdIO, cl *client.Client, asJSON, queues bool) int {
	gs, err := cl.ListGroups(ctx)
	if err != nil {
		return c.fail(err)
	}
	var qs []api.Queue
	if queues {
		if qs, err = cl.ListQueues(ctx); err != nil {
			return c.fail(err)
		}
	}
	if asJSON {
		if queues {
			return writeJSONLine(c, qs)
		}
		return writeJSONLine(c, gs)
	}
	var lines []treeLine
	for i := range gs {
		lines = append(lines, treeLine{name: gs[i].Name, parent: gs[i].Parent, group: true, g: &gs[i]})
	}
	for i := range qs {
		lines = append(lines, treeLine{name: qs[i].Name, parent: qs[i].Parent, q: &qs[i]})
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	// A RETRY column when a queue has a retry policy.
	retry := slices.ContainsFunc(qs, func(q api.Queue) bool { return q.RetryPolicy != nil })
	// A NEVER-FIT column when a queue has queued jobs no known node can
	// run (counted among QUEUED too).
	never := slices.ContainsFunc(qs, func(q api.Queue) bool { return q.Status != nil && q.Status.NeverFit > 0 })
	nf := func(n string) string {
		if never {
			return "\t" + n
		}
		return ""
	}
	if queues {
		head := "QUEUE\tFACTOR\tQUEUED" + nf("NEVER-FIT") + "\tLEASED\tRUNNING\tSHARE\tFAIR SHARE\tADJUSTED FAIR SHARE\tUSAGE"
		if retry {
			head += "\tRETRY"
		}
		fmt.Fprintln(tw, head)
	} else {
		fmt.Fprintln(tw, "GROUP\tFACTOR\tGUARANTEED\tLIMIT\tLENDING LIMIT\tQUEUED\tRUNNING\tSHARE\tFAIR SHARE\tADJUSTED FAIR SHARE\tUSAGE")
	}
	walkTree(lines, func(l treeLine, depth int) {
		indent := strings.Repeat("  ", depth)
		switch {
		case l.q != nil:
			s := l.q.Status
			name := l.name
			if s.Cordoned {
				name += " (cordoned)"
			}
			fmt.Fprintf(tw, "%s%s\t%g\t%d%s\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f", indent, name, factor(l.q.PriorityFactor),
				s.Queued, nf(strconv.Itoa(s.NeverFit)), s.Leased, s.Running, s.Share, s.FairShare, s.AdjustedFairShare, s.Usage)
			if retry {
				fmt.Fprintf(tw, "\t%s", retryText(l.q.RetryPolicy))
			}
			fmt.Fprintln(tw)
			poolLines(tw, indent, s.Pools, retry, true, nf("-"))
		case queues:
			s := l.g.Status
			fmt.Fprintf(tw, "%s%s/\t%g\t%d%s\t-\t%d\t%.3f\t%.3f\t%.3f\t%.3f", indent, l.name, factor(l.g.PriorityFactor),
				s.Queued, nf("-"), s.Running, s.Share, s.FairShare, s.AdjustedFairShare, s.Usage)
			if retry {
				fmt.Fprint(tw, "\t-")
			}
			fmt.Fprintln(tw)
			poolLines(tw, indent, s.Pools, retry, true, nf("-"))
		default:
			s := l.g.Status
			fmt.Fprintf(tw, "%s%s\t%g\t%s\t%s\t%s\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\n", indent, l.name, factor(l.g.PriorityFactor),
				quotaText(l.g.Guaranteed), quotaText(l.g.Limit), quotaText(l.g.LendingLimit),
				s.Queued, s.Running, s.Share, s.FairShare, s.AdjustedFairShare, s.Usage)
			poolLines(tw, indent, s.Pools, false, false, "")
		}
	})
	_ = tw.Flush()
	return 0
}

// poolLines prints, under a queue's or group's line, its standing in each
// pool's last cycle ("  @pool"), when the service has more than one pool:
// queued and running in the pool, share, fair share, adjusted fair
// share. queues: the queue list's columns (else the group list's), with
// never as the NEVER-FIT cell ("" without the column).
func poolLines(tw io.Writer, indent string, pools []api.QueueShare, retry, queues bool, never string) {
	for _, p := range pools {
		if queues {
			fmt.Fprintf(tw, "%s  @%s\t\t%d%s\t-\t%d\t%.3f\t%.3f\t%.3f\t-", indent, p.Pool, p.Queued, never, p.Running, p.Share, p.FairShare, p.AdjustedFairShare)
			if retry {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprintln(tw)
			continue
		}
		fmt.Fprintf(tw, "%s  @%s\t\t\t\t\t%d\t%d\t%.3f\t%.3f\t%.3f\t-\n", indent, p.Pool, p.Queued, p.Running, p.Share, p.FairShare, p.AdjustedFairShare)
	}
}

// retryText is a retry policy in a line: "max 5: 137,143,oom ×3 avoid;
// 1 ×1", each rule its exit codes and reasons, its retry limit and
// whether it avoids the node; "max default" when the policy gives no
// maxAttempts; "-" for no policy.
func retryText(p *api.RetryPolicy) string {
	if p == nil {
		return "-"
	}
	max := "default"
	if p.MaxAttempts > 0 {
		max = strconv.Itoa(p.MaxAttempts)
	}
	var rules []string
	for _, r := range p.Rules {
		var on []string
		for _, c := range r.OnExitCodes {
			on = append(on, strconv.Itoa(c))
		}
		for _, why := range r.OnReasons {
			on = append(on, string(why))
		}
		t := strings.Join(on, ",")
		if r.RetryLimit > 0 {
			t += " ×" + strconv.Itoa(r.RetryLimit)
		}
		if r.AvoidSameNode {
			t += " avoid"
		}
		rules = append(rules, t)
	}
	if len(rules) == 0 {
		return "max " + max
	}
	return "max " + max + ": " + strings.Join(rules, "; ")
}

func factor(f float64) float64 {
	if f == 0 {
		return 1
	}
	return f
}

// quotaText is a quota as the flags take it (cpu=16,memory=64Gi), "-"
// when none is given.
func quotaText(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

// walkTree calls fn with each line depth first from the root, siblings by
// name; a line whose parent is not listed hangs from the root.
func walkTree(lines []treeLine, fn func(l treeLine, depth int)) {
	known := map[string]bool{}
	for _, l := range lines {
		if l.group {
			known[l.name] = true
		}
	}
	children := map[string][]treeLine{}
	for _, l := range lines {
		p := l.parent
		if !known[p] || p == l.name {
			p = ""
		}
		children[p] = append(children[p], l)
	}
	seen := map[string]bool{}
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		cs := children[parent]
		slices.SortFunc(cs, func(a, b treeLine) int { return strings.Compare(a.name, b.name) })
		for _, l := range cs {
			fn(l, depth)
			if l.group && !seen[l.name] {
				seen[l.name] = true
				walk(l.name, depth+1)
			}
		}
	}
	walk("", 0)
}

// isHelp reports whether a subcommand position holds a request for help.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}
