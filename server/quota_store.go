package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/seglog/seglog/vfs"
)

// QuotasFile is the file, in a single node's store directory, that holds
// its client quotas (docs/quotas.md). A cluster keeps them in its
// replicated metadata instead.
const QuotasFile = "client-quotas"

// The file is a smallFile frame (smallfile.go) of entries. An entry is a
// flags byte (1 a user named, 2 the default user, 4 a client id named, 8
// the default client id), each name present (uint16 length, UTF-8), a byte with one
// bit per key present (1 producer_byte_rate, 2 consumer_byte_rate, 4
// request_percentage) and each present value (float64 bits).
var quotaFrame = smallFile{magic: "SGQT", version: 1, kind: "quotas", minEntry: minQuotaEntry}

const (
	// quotaHeaderSize is where the first entry starts.
	quotaHeaderSize = smallHeaderSize
	// minQuotaEntry is the smallest entry: flags, a one-byte name, the
	// key mask and one value. It bounds the count a header may claim.
	minQuotaEntry = 1 + 3 + 1 + 8
	// maxQuotaFile bounds the file read.
	maxQuotaFile = 64 << 20
	// maxQuotaEntities bounds the entities a single node keeps, so the
	// file (at most about 2 KiB an entity) stays under maxQuotaFile and
	// its rewrite on every change stays cheap.
	maxQuotaEntities = 10_000
)

const (
	quotaFlagUser = 1 << iota
	quotaFlagDefaultUser
	quotaFlagClient
	quotaFlagDefaultClient
)

// QuotasError is a damaged quotas file: which file, the byte where it
// stops making sense, and why.
type QuotasError struct {
	File   string
	Offset int64
	Reason string
}

// Error names the file, the byte and the reason.
func (e *QuotasError) Error() string {
	return fmt.Sprintf("%s: damaged at byte %d: %s", e.File, e.Offset, e.Reason)
}

// Quotas are a single node's client quotas, as its QuotasFile holds them.
// Every change rewrites the file atomically before it is seen.
type Quotas struct {
	fs   vfs.FS
	path string

	mu  sync.Mutex // serializes changes
	cfg atomic.Pointer[quotaConfig]
}

// LoadQuotas reads dir's quotas file; a missing one is no quotas. A
// damaged one is a *QuotasError.
func LoadQuotas(fsys vfs.FS, dir string) (*Quotas, error) {
	q := &Quotas{fs: fsys, path: filepath.Join(dir, QuotasFile)}
	q.cfg.Store(newQuotaConfig(nil))
	b, err := vfs.ReadFileLimit(fsys, q.path, maxQuotaFile)
	if errors.Is(err, fs.ErrNotExist) {
		return q, nil
	}
	if err != nil {
		return nil, err
	}
	list, err := decodeQuotas(b)
	if err != nil {
		var qe *QuotasError
		if errors.As(err, &qe) {
			qe.File = q.path
		}
		return nil, err
	}
	q.cfg.Store(newQuotaConfig(list))
	return q, nil
}

// List returns every entity's quotas, sorted by entity.
func (q *Quotas) List() []ClientQuota { return q.cfg.Load().list() }

// Alter checks every change (CheckQuotaChange), then applies them all and
// writes the file; nothing changes unless all are accepted and written.
func (q *Quotas) Alter(changes []ClientQuotaChange) error {
	for _, c := range changes {
		if err := CheckQuotaChange(c); err != nil {
			return fmt.Errorf("%v: %w", c.Entity, err)
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	next := q.cfg.Load().apply(changes)
	if n := len(next.entities); n > maxQuotaEntities {
		return fmt.Errorf("%d client quota entities, the limit is %d", n, maxQuotaEntities)
	}
	if err := vfs.WriteFileAtomic(q.fs, q.path, encodeQuotas(next.list())); err != nil {
		return err
	}
	q.cfg.Store(next)
	return nil
}

func (q *Quotas) config() *quotaConfig { return q.cfg.Load() }

func encodeQuotas(list []ClientQuota) []byte {
	b := quotaFrame.begin(len(list))
	name := func(s string) {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	for _, q := range list {
		e := q.Entity
		var flags byte
		switch {
		case e.User != "":
			flags |= quotaFlagUser
		case e.DefaultUser:
			flags |= quotaFlagDefaultUser
		}
		switch {
		case e.ClientID != "":
			flags |= quotaFlagClient
		case e.DefaultClientID:
			flags |= quotaFlagDefaultClient
		}
		b = append(b, flags)
		if e.User != "" {
			name(e.User)
		}
		if e.ClientID != "" {
			name(e.ClientID)
		}
		var mask byte
		for i, k := range quotaKeys {
			if _, ok := q.Values[k]; ok {
				mask |= 1 << i
			}
		}
		b = append(b, mask)
		for _, k := range quotaKeys {
			if v, ok := q.Values[k]; ok {
				b = binary.BigEndian.AppendUint64(b, math.Float64bits(v))
			}
		}
	}
	return quotaFrame.seal(b)
}

// decodeQuotas parses a quotas file; errors are *QuotasError without the
// file name. Every entry must be one CheckQuotaChange would accept.
func decodeQuotas(b []byte) ([]ClientQuota, error) {
	bad := func(off int, format string, args ...any) error {
		return &QuotasError{Offset: int64(off), Reason: fmt.Sprintf(format, args...)}
	}
	count, end, err := quotaFrame.open(b, bad)
	if err != nil {
		return nil, err
	}
	list := make([]ClientQuota, 0, count)
	seen := make(map[QuotaEntity]bool, count)
	off := smallHeaderSize
	need := func(n int) bool { return off+n <= end }
	name := func() (string, bool) {
		if !need(2) {
			return "", false
		}
		n := int(binary.BigEndian.Uint16(b[off:]))
		if n == 0 || !need(2+n) || !utf8.Valid(b[off+2:off+2+n]) {
			return "", false
		}
		s := string(b[off+2 : off+2+n])
		off += 2 + n
		return s, true
	}
	for range count {
		start := off
		if !need(1) {
			return nil, bad(off, "entry cut short")
		}
		flags := b[off]
		off++
		if flags&^0xf != 0 || flags&(quotaFlagUser|quotaFlagDefaultUser) == quotaFlagUser|quotaFlagDefaultUser ||
			flags&(quotaFlagClient|quotaFlagDefaultClient) == quotaFlagClient|quotaFlagDefaultClient {
			return nil, bad(start, "bad entity flags %#x", flags)
		}
		var q ClientQuota
		var ok bool
		q.Entity.DefaultUser = flags&quotaFlagDefaultUser != 0
		q.Entity.DefaultClientID = flags&quotaFlagDefaultClient != 0
		if flags&quotaFlagUser != 0 {
			if q.Entity.User, ok = name(); !ok {
				return nil, bad(off, "bad user name")
			}
		}
		if flags&quotaFlagClient != 0 {
			if q.Entity.ClientID, ok = name(); !ok {
				return nil, bad(off, "bad client id")
			}
		}
		if !need(1) {
			return nil, bad(off, "entry cut short")
		}
		mask := b[off]
		if mask == 0 || mask >= 1<<numQuotaKinds {
			return nil, bad(off, "bad key mask %#x", mask)
		}
		off++
		q.Values = map[string]float64{}
		for i, k := range quotaKeys {
			if mask&(1<<i) == 0 {
				continue
			}
			if !need(8) {
				return nil, bad(off, "entry cut short")
			}
			q.Values[k] = math.Float64frombits(binary.BigEndian.Uint64(b[off:]))
			off += 8
		}
		if err := CheckQuotaChange(ClientQuotaChange{Entity: q.Entity, Set: q.Values}); err != nil {
			return nil, bad(start, "entry %v: %v", q.Entity, err)
		}
		if seen[q.Entity] {
			return nil, bad(start, "second entry for %v", q.Entity)
		}
		seen[q.Entity] = true
		list = append(list, q)
	}
	if off != end {
		return nil, bad(off, "%d bytes after the last entry", end-off)
	}
	return list, nil
}
