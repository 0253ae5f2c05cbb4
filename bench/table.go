package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints results as an aligned table: for each workload a row
// for seglog and one for its baseline, and the ratio with its spread over
// rounds. Notes under the table say what each baseline is.
func WriteTable(w io.Writer, results []*Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tside\trecord B\tbatch\twriters\tsync\trecords/s\tMB/s\tp50 µs\tp99 µs\tp99.9 µs\tmax µs\tCPU s\tratio\t")
	for _, r := range results {
		mode := r.Workload
		if r.Mode == "batch" {
			mode += " (batches)"
		}
		if r.Compression != "" && r.Compression != "none" {
			mode += " " + r.Compression
		}
		fmt.Fprintf(tw, "%s\tseglog\t%d\t%d\t%d\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%.2f\t%s\t\n",
			mode, r.RecordBytes, r.Batch, r.Writers, r.Sync,
			thousands(r.RecordsPerSec), r.BytesPerSec/1e6,
			us(r.Latency.P50), us(r.Latency.P99), us(r.Latency.P999), us(r.Latency.Max),
			r.CPUSeconds, ratioText(r))
		fmt.Fprintf(tw, "\tbaseline\t\t\t\t\t%s\t%.1f\t%s\t%s\t%s\t%s\t%.2f\t\t\n",
			thousands(r.BaselineRecordsPerSec), r.BaselineBytesPerSec/1e6,
			us(r.BaselineLatency.P50), us(r.BaselineLatency.P99), us(r.BaselineLatency.P999), us(r.BaselineLatency.Max),
			r.BaselineCPUSeconds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range results {
		if r.Speedup > 0 && r.Writers > 1 {
			fmt.Fprintf(w, "%s, %d writers: %.1f× the 1-writer rate of this sweep (group commit)\n", r.Workload, r.Writers, r.Speedup)
		}
	}
	seen := map[string]bool{}
	for _, r := range results {
		note := fmt.Sprintf("%s baseline: %s.", r.Workload, r.Baseline)
		if !seen[note] {
			seen[note] = true
			fmt.Fprintln(w, note)
		}
	}
	var verified int64
	rounds := 0
	for _, r := range results {
		verified += r.Verified
		rounds = r.Rounds
	}
	fmt.Fprintf(w, "Rates are medians of %d interleaved rounds per side; ratio = median of per-round seglog ÷ baseline [min–max].\n", rounds)
	fmt.Fprintf(w, "Verified outside the timed sections: %s records read back as written (reads: parsed by the peer; lookups: checked against the baseline's answer).\n", thousands(float64(verified)))
	return nil
}

func ratioText(r *Result) string {
	if len(r.RoundRatios) == 0 {
		return ratioNum(r.Ratio) + "×"
	}
	lo, hi := r.RoundRatios[0], r.RoundRatios[0]
	for _, x := range r.RoundRatios {
		lo, hi = min(lo, x), max(hi, x)
	}
	return fmt.Sprintf("%s× [%s–%s]", ratioNum(r.Ratio), ratioNum(lo), ratioNum(hi))
}

// ratioNum keeps two significant digits for ratios far below 1 (a lookup
// against an in-memory search), two decimals otherwise.
func ratioNum(x float64) string {
	if x != 0 && x < 0.1 {
		return fmt.Sprintf("%.2g", x)
	}
	return fmt.Sprintf("%.2f", x)
}

func us(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 1000:
		return fmt.Sprintf("%.0f", v)
	}
	return thousands(v)
}

// thousands formats v rounded, with thin separators every three digits.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
