package benchcluster

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// Write prints r as seglog bench cluster's tables and ratios.
func Write(w io.Writer, r *Result) error {
	c := r.Config
	fmt.Fprintf(w, "%d records of %d bytes to %d partitions per round, kgo over loopback (idempotent, acks=all, no compression),\n", c.Records, c.RecordSize, c.Partitions)
	fmt.Fprintf(w, "consumed from the partitions' leaders; %d rounds, each started by the next system; medians; load average %.1f before, %.1f after;\n", c.Rounds, r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(w, "synced: the same node, topics of flush.messages=1 (each batch fsynced before its ack, as each replica of the cluster fsyncs)\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tproduce rec/s\tproduce MB/s\tconsume MB/s\tserver CPU s/GB produced\tserver CPU s/GB consumed\t")
	for _, s := range []Side{r.Single, r.Synced, r.Cluster} {
		fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%.0f\t%.2f\t%.2f\t\n", s.Name, s.ProduceRecsSec, s.ProduceMBs, s.ConsumeMBs, s.ProduceCPUSecPerGB, s.ConsumeCPUSecPerGB)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s / %s: produce %.2fx %s, consume %.2fx %s (median of the rounds' ratios [their range])\n",
		r.Cluster.Name, r.Single.Name, r.ProduceRatio, spread(r.ProduceRatios), r.ConsumeRatio, spread(r.ConsumeRatios))
	fmt.Fprintf(w, "%s / %s: produce %.2fx %s\n", r.Cluster.Name, r.Synced.Name, r.SyncedProduceRatio, spread(r.SyncedProduceRatios))
	// Each round's figures: on a shared machine one slow round shows here
	// rather than only as a wide range.
	for i := range min(len(r.Single.Rounds), len(r.Synced.Rounds), len(r.Cluster.Rounds)) {
		a, s, b := r.Single.Rounds[i], r.Synced.Rounds[i], r.Cluster.Rounds[i]
		fmt.Fprintf(w, "  round %d: produce %.0f / %.0f / %.0f rec/s, consume %.0f / %.0f / %.0f MB/s\n",
			i+1, b.ProduceRecsSec, a.ProduceRecsSec, s.ProduceRecsSec, b.ConsumeMBs, a.ConsumeMBs, s.ConsumeMBs)
	}
	if len(r.Single.Rounds) > 0 {
		fmt.Fprintf(w, "  (each round: %s / %s / %s)\n", r.Cluster.Name, r.Single.Name, r.Synced.Name)
	}
	if r.Config.Kills == 0 {
		return nil
	}
	rate := "as fast as acknowledged"
	if c.FailoverRate > 0 {
		rate = fmt.Sprintf("%d records/s offered", c.FailoverRate)
	}
	fmt.Fprintf(w, "\nfailover: SIGKILL of a partition's leader while a producer writes acks=all (%s, client metadata refresh after %v at the soonest), restarted after each:\n\n", rate, c.MetadataMinAge)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kill\tpartition\tnode killed\tnew leader\tfirst ack s\tnew leader seen s\trestart: listening s\tall in sync s\t")
	secs := func(s float64) string {
		if s < 0 {
			return "never"
		}
		return fmt.Sprintf("%.3f", s)
	}
	for i, f := range r.Failovers {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.3f\t%.3f\t%s\t%s\t\n", i+1, f.Partition, f.Killed, f.NewLeader, f.AckSec, f.LeaderSec, secs(f.ListenSec), secs(f.RejoinSec))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nkill -> first ack on that partition: median %.3f s, max %.3f s over %d kills\n", r.AckMedianSec, r.AckMaxSec, len(r.Failovers))
	fmt.Fprintf(w, "kill -> Metadata names a new leader: median %.3f s, max %.3f s\n", r.LeaderMedianSec, r.LeaderMaxSec)
	after := func(what string, s float64) string {
		if s < 0 {
			return what + ": never"
		}
		return fmt.Sprintf("%s after median %.3f s", what, s)
	}
	fmt.Fprintf(w, "killed node started again: %s, %s\n", after("listening", r.ListenMedianSec), after("every replica in sync", r.RejoinMedian))
	k := r.Check
	if k == nil {
		fmt.Fprintf(w, "checker: not run, the failover phase failed after %d of %d kills\n", len(r.Failovers), c.Kills)
		return nil
	}
	fmt.Fprintf(w, "checker: %d records produced (a final mark per partition included), %d acknowledged, %d failed (%d of them stored), %d read back: ", r.FailoverRecords, k.Acked, k.Failed, k.Uncertain, k.Read)
	if k.OK() {
		fmt.Fprintln(w, "every acknowledged record read back once, at its offset")
		return nil
	}
	fmt.Fprintf(w, "%d VIOLATIONS\n", len(k.Violations))
	for i, v := range k.Violations {
		if i == maxListed {
			fmt.Fprintf(w, "  ... and %d more\n", len(k.Violations)-maxListed)
			break
		}
		fmt.Fprintf(w, "  %s\n", v)
	}
	return nil
}

// maxListed bounds the violations Write lists: a broken run can break a
// rule for every record after the fault, and the first ones say where it
// started; the JSON has them all.
const maxListed = 50

// spread is the range of xs, [lo-hi].
func spread(xs []float64) string {
	if len(xs) == 0 {
		return "[]"
	}
	return fmt.Sprintf("[%.2f-%.2f]", slices.Min(xs), slices.Max(xs))
}
