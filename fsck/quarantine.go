package fsck

import (
	"fmt"
	"math"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
)

// KindQuarantine is a quarantine file (layout.QuarantineName): bytes the
// Log's recovery (or fsck's repair) cut from the log and kept instead of
// deleting them, because valid batches followed the damage, or because
// they were a whole segment after a cut. They are not part of the log, and
// neither seglog nor Kafka reads or deletes them. It is a warning: nothing
// was lost, but someone should look at the batches (seglog dump FILE) and
// move the file away. Repair leaves it alone.
const KindQuarantine Kind = "quarantine"

// checkQuarantine reports the quarantine file name: its size, where its
// bytes came from, and the valid batches and records fsck's own scanner
// finds in it (it resynchronizes on any CRC-valid batch, whatever its
// offsets, as the bytes begin with the damage).
func (c *checker) checkQuarantine(name string) {
	base, pos, _ := layout.ParseQuarantineName(name)
	f, err := c.fs.Open(c.path(name))
	if err != nil {
		c.addf(name, 0, KindIO, Error, fixAction{}, "cannot open quarantine file: %v", err)
		return
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		c.addf(name, 0, KindIO, Error, fixAction{}, "cannot stat quarantine file: %v", err)
		return
	}
	sc := NewScanner(f, size, c.opts.MaxEntryBytes)
	sc.SetMinOffset(math.MinInt64)
	var batches, records int64
	first, last := int64(-1), int64(-1)
	for {
		e, ok, err := sc.Next()
		if err != nil {
			c.addf(name, sc.Pos(), KindIO, Error, fixAction{}, "cannot read quarantine file: %v", err)
			return
		}
		if !ok {
			break
		}
		if e.Damaged() {
			continue
		}
		batches++
		if e.Magic == record.CurrentMagic {
			records += int64(e.Batch.NumRecords())
		} else {
			records++
		}
		if first < 0 {
			first = e.BaseOffset()
		}
		last = e.LastOffset()
	}
	from := fmt.Sprintf("%s from byte %d (where damage began)", layout.FileName(base, layout.LogSuffix), pos)
	if pos == 0 {
		// Damage at the first byte, or a later segment set aside whole:
		// the name cannot tell, the first bytes can (seglog dump).
		from = fmt.Sprintf("%s from its first byte (damage there, or the whole segment after a cut before it)", layout.FileName(base, layout.LogSuffix))
	}
	held := "no batch fsck can read"
	if batches > 0 {
		held = fmt.Sprintf("%d valid batches with %d records (offsets %d-%d)", batches, records, first, last)
	}
	c.addf(name, 0, KindQuarantine, Warning, fixAction{},
		"quarantine file: %d bytes of %s that recovery cut from the log but kept; they hold %s and are not part of the log; read them with: seglog dump %s (move the file away once handled)",
		size, from, held, c.path(name))
}
