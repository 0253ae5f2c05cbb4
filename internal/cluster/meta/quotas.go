package meta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Client quotas (KIP-546) live in the metadata so that every node
// enforces the same ones. The server decides what a valid quota is
// (server.CheckQuotaChange, run by the controller before it proposes);
// Apply only bounds sizes and shapes, as for topic configs.

// kindAlterClientQuotas is AlterClientQuotas' type byte.
const kindAlterClientQuotas kind = 12

// ErrInvalidQuota reports an AlterClientQuotas Apply refuses: an empty
// entity, a part both named and the default, a key or name out of
// bounds, a value not finite and above zero, too many changes or
// entities.
var ErrInvalidQuota = errors.New("meta: invalid client quota")

// Bounds of the quotas: a command's changes, and the entities the state
// holds (each a few dozen bytes in every snapshot).
const (
	maxQuotaChanges  = 1024
	maxQuotaEntities = 100_000
)

// QuotaEntity names whom a quota applies to, as server.QuotaEntity: a
// user part, a client-id part, each absent, named or the default.
type QuotaEntity struct {
	User            string
	DefaultUser     bool
	ClientID        string
	DefaultClientID bool
}

// QuotaChange alters one entity's quotas: Set's keys take their values,
// Remove's keys are removed.
type QuotaChange struct {
	Entity QuotaEntity
	Set    map[string]float64
	Remove []string
}

// ClientQuota is one entity's quotas by key.
type ClientQuota struct {
	Entity QuotaEntity
	Values map[string]float64
}

// AlterClientQuotas applies every change, all or none.
type AlterClientQuotas struct {
	Changes []QuotaChange
}

func (*AlterClientQuotas) kind() kind { return kindAlterClientQuotas }

func (c *AlterClientQuotas) encodeBody(w *writer) {
	w.uvarint(uint64(len(c.Changes)))
	for _, ch := range c.Changes {
		writeQuotaEntity(w, ch.Entity)
		writeQuotaValues(w, ch.Set)
		w.strs(ch.Remove)
	}
}

func (c *AlterClientQuotas) decodeBody(r *reader) {
	n := r.count(3)
	for i := 0; i < n && r.err == nil; i++ {
		ch := QuotaChange{Entity: readQuotaEntity(r)}
		ch.Set = readQuotaValues(r)
		ch.Remove = r.strs()
		c.Changes = append(c.Changes, ch)
	}
}

// The entity's flags byte: which parts are named or the default.
const (
	quotaUser = 1 << iota
	quotaDefaultUser
	quotaClient
	quotaDefaultClient
)

func writeQuotaEntity(w *writer, e QuotaEntity) {
	var f uint8
	if e.User != "" {
		f |= quotaUser
	}
	if e.DefaultUser {
		f |= quotaDefaultUser
	}
	if e.ClientID != "" {
		f |= quotaClient
	}
	if e.DefaultClientID {
		f |= quotaDefaultClient
	}
	w.u8(f)
	if e.User != "" {
		w.str(e.User)
	}
	if e.ClientID != "" {
		w.str(e.ClientID)
	}
}

func readQuotaEntity(r *reader) QuotaEntity {
	f := r.u8()
	if f&^0xf != 0 {
		r.fail("quota entity flags %#x", f)
	}
	e := QuotaEntity{DefaultUser: f&quotaDefaultUser != 0, DefaultClientID: f&quotaDefaultClient != 0}
	if f&quotaUser != 0 {
		if e.User = r.str(); e.User == "" {
			r.fail("empty quota user")
		}
	}
	if f&quotaClient != 0 {
		if e.ClientID = r.str(); e.ClientID == "" {
			r.fail("empty quota client id")
		}
	}
	return e
}

// writeQuotaValues writes values in key order, each a string and the
// float64's bits, so equal maps encode equally.
func writeQuotaValues(w *writer, m map[string]float64) {
	keys := slices.Sorted(maps.Keys(m))
	w.uvarint(uint64(len(keys)))
	for _, k := range keys {
		w.str(k)
		w.b = binary.BigEndian.AppendUint64(w.b, math.Float64bits(m[k]))
	}
}

func readQuotaValues(r *reader) map[string]float64 {
	n := r.count(1 + 8)
	if r.err != nil || n == 0 {
		return nil
	}
	m := make(map[string]float64, n)
	prev := ""
	for i := 0; i < n && r.err == nil; i++ {
		k := r.str()
		if i > 0 && k <= prev {
			r.fail("quota key %q after %q", k, prev)
			return nil
		}
		if len(r.b) < 8 {
			r.fail("truncated quota value")
			return nil
		}
		x := math.Float64frombits(binary.BigEndian.Uint64(r.b))
		// No state holds a value that is not finite (alterClientQuotas
		// refuses it), and NaN would not even decode equal to itself.
		if math.IsNaN(x) || math.IsInf(x, 0) {
			r.fail("quota %q: value %v is not finite", k, x)
			return nil
		}
		m[k] = x
		r.b = r.b[8:]
		prev = k
	}
	return m
}

func checkQuotaEntity(e QuotaEntity) error {
	switch {
	case e.User == "" && !e.DefaultUser && e.ClientID == "" && !e.DefaultClientID:
		return fmt.Errorf("%w: empty entity", ErrInvalidQuota)
	case e.User != "" && e.DefaultUser, e.ClientID != "" && e.DefaultClientID:
		return fmt.Errorf("%w: a part both named and the default", ErrInvalidQuota)
	case len(e.User) > maxConfigLen || len(e.ClientID) > maxConfigLen:
		return fmt.Errorf("%w: a name over %d bytes", ErrInvalidQuota, maxConfigLen)
	}
	return nil
}

func (s *State) alterClientQuotas(c *AlterClientQuotas) (*State, error) {
	if len(c.Changes) == 0 || len(c.Changes) > maxQuotaChanges {
		return nil, fmt.Errorf("%w: %d changes (1 to %d)", ErrInvalidQuota, len(c.Changes), maxQuotaChanges)
	}
	n := s.next()
	for _, ch := range c.Changes {
		if err := checkQuotaEntity(ch.Entity); err != nil {
			return nil, err
		}
		v := maps.Clone(n.quotas[ch.Entity])
		if v == nil {
			v = map[string]float64{}
		}
		for k, x := range ch.Set {
			if k == "" || len(k) > maxConfigLen || math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
				return nil, fmt.Errorf("%w: %.64q = %v", ErrInvalidQuota, k, x)
			}
			v[k] = x
		}
		for _, k := range ch.Remove {
			delete(v, k)
		}
		if len(v) > maxConfigs {
			return nil, fmt.Errorf("%w: %d keys", ErrInvalidQuota, len(v))
		}
		if len(v) == 0 {
			delete(n.quotas, ch.Entity)
		} else {
			n.quotas[ch.Entity] = v
		}
	}
	if len(n.quotas) > maxQuotaEntities {
		return nil, fmt.Errorf("%w: %d entities, the limit is %d", ErrInvalidQuota, len(n.quotas), maxQuotaEntities)
	}
	return n, nil
}

// quotaEntityKey orders entities: equal states encode equally.
func quotaEntityKey(e QuotaEntity) string {
	w := &writer{}
	writeQuotaEntity(w, e)
	return string(w.b)
}

// ClientQuotas returns every entity's quotas, in a fixed order.
func (s *State) ClientQuotas() []ClientQuota {
	out := make([]ClientQuota, 0, len(s.quotas))
	for e, v := range s.quotas {
		out = append(out, ClientQuota{Entity: e, Values: maps.Clone(v)})
	}
	slices.SortFunc(out, func(a, b ClientQuota) int {
		return strings.Compare(quotaEntityKey(a.Entity), quotaEntityKey(b.Entity))
	})
	return out
}

// writeQuotas appends the state's quotas to a snapshot.
func writeQuotas(w *writer, s *State) {
	qs := s.ClientQuotas()
	w.uvarint(uint64(len(qs)))
	for _, q := range qs {
		writeQuotaEntity(w, q.Entity)
		writeQuotaValues(w, q.Values)
	}
}

// readQuotas reads what writeQuotas wrote, refusing entities out of
// order or repeated.
func readQuotas(r *reader, s *State) {
	n := r.count(3)
	prev := ""
	for i := 0; i < n && r.err == nil; i++ {
		e := readQuotaEntity(r)
		v := readQuotaValues(r)
		k := quotaEntityKey(e)
		if i > 0 && k <= prev {
			r.fail("quota entity %v out of order", e)
			return
		}
		if r.err == nil && (checkQuotaEntity(e) != nil || len(v) == 0) {
			r.fail("quota entity %v", e)
			return
		}
		prev = k
		s.quotas[e] = v
	}
}
