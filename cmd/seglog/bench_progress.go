package main

import (
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// barProgress draws bench.Progress phases as progress bars on a terminal.
type barProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func (p *barProgress) Start(phase string, total int64, unit string) {
	p.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(phase),
		progressbar.OptionSetItsString(unit),
		progressbar.OptionShowIts(),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(24),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
}

func (p *barProgress) Set(done int64) {
	if p.bar != nil {
		_ = p.bar.Set64(done) // drawing errors are not the benchmark's
	}
}

func (p *barProgress) Finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
}
