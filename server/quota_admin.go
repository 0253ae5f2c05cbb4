package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// QuotaCluster is what a Cluster implements to hold client quotas in its
// replicated metadata: every node then enforces the same quotas, and
// AlterClientQuotas on any node changes them. A Cluster without it has
// no quotas, and AlterClientQuotas is refused.
type QuotaCluster interface {
	// QuotasVersion changes whenever the quotas may have: the server
	// reads ClientQuotas again only then.
	QuotasVersion() uint64
	// ClientQuotas returns every entity's quotas.
	ClientQuotas() []ClientQuota
	// AlterClientQuotas applies changes, each accepted by
	// CheckQuotaChange, through the controller, all or none, and returns
	// once this node's metadata holds them.
	AlterClientQuotas(ctx context.Context, changes []ClientQuotaChange) error
}

// initQuotas gives the server its quotas: the store's quotas file on a
// single node (a damaged one fails New), the metadata in a cluster.
func (s *Server) initQuotas() error {
	var config func() *quotaConfig
	switch qc, ok := s.cluster.(QuotaCluster); {
	case s.cluster == nil:
		q, err := LoadQuotas(s.st.FS(), s.st.Dir())
		if err != nil {
			return err
		}
		s.localQuotas = q
		config = q.config
	case ok:
		cache := &clusterQuotas{qc: qc}
		config = cache.config
	default:
		config = func() *quotaConfig { return nil }
	}
	var clk clock = realClock{}
	if s.cfg.quotaClock != nil {
		clk = s.cfg.quotaClock
	}
	s.quota = newQuotaManager(clk, config)
	return nil
}

// clusterQuotas keeps the config built from a QuotaCluster's list until
// its version changes.
type clusterQuotas struct {
	qc QuotaCluster

	mu      sync.Mutex
	version uint64
	cfg     *quotaConfig
}

func (c *clusterQuotas) config() *quotaConfig {
	v := c.qc.QuotasVersion()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfg == nil || v != c.version {
		c.cfg, c.version = newQuotaConfig(c.qc.ClientQuotas()), v
	}
	return c.cfg
}

// entityPart is one part of an entity as the protocol sends it: a type
// and a name, nil for the default.
type entityPart struct {
	typ  string
	name *string
}

// quotaRefusal is a change refused with a Kafka error code and message.
type quotaRefusal struct {
	code int16
	msg  string
}

func (e *quotaRefusal) Error() string { return e.msg }

func refuse(e *kerr.Error, msg string) error { return &quotaRefusal{e.Code, msg} }

// quotaEntityOf reads an entity from the protocol's (type, name) pairs; a
// nil name is the default. Kafka's validation: no part twice, a known
// type, no empty name.
func quotaEntityOf(parts []entityPart) (QuotaEntity, error) {
	var e QuotaEntity
	seen := map[string]bool{}
	for _, p := range parts {
		if seen[p.typ] {
			return e, refuse(kerr.InvalidRequest, fmt.Sprintf("duplicate %s in the entity", p.typ))
		}
		seen[p.typ] = true
		if p.name != nil && *p.name == "" {
			return e, refuse(kerr.InvalidRequest, "empty "+p.typ+" not supported")
		}
		switch p.typ {
		case QuotaEntityUser:
			e.DefaultUser = p.name == nil
			if p.name != nil {
				e.User = *p.name
			}
		case QuotaEntityClientID:
			e.DefaultClientID = p.name == nil
			if p.name != nil {
				e.ClientID = *p.name
			}
		default:
			// ip quotas (KIP-612) bound connection rates, which seglog
			// does not measure.
			return e, refuse(kerr.UnsupportedVersion, "unhandled client quota entity type: "+p.typ)
		}
	}
	if len(parts) == 0 {
		return e, refuse(kerr.InvalidRequest, "invalid empty client quota entity")
	}
	return e, nil
}

func (s *Server) describeClientQuotas(r *kmsg.DescribeClientQuotasRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(code int16, msg string) kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage, resp.Entries = code, &msg, nil
		return resp
	}
	seen := map[string]bool{}
	for _, c := range r.Components {
		if seen[c.EntityType] {
			return fail(kerr.InvalidRequest.Code, "duplicate filter component entity type "+c.EntityType)
		}
		seen[c.EntityType] = true
		switch c.EntityType {
		case QuotaEntityUser, QuotaEntityClientID:
		default:
			return fail(kerr.UnsupportedVersion.Code, "unhandled client quota entity type: "+c.EntityType)
		}
		switch {
		case c.MatchType == kmsg.QuotasMatchTypeExact && c.Match == nil:
			return fail(kerr.InvalidRequest.Code, "match type exact with a null match")
		case c.MatchType == kmsg.QuotasMatchTypeExact && *c.Match == "":
			return fail(kerr.InvalidRequest.Code, "empty "+c.EntityType+" not supported")
		case c.MatchType != kmsg.QuotasMatchTypeExact && c.Match != nil:
			return fail(kerr.InvalidRequest.Code, "a match string with match type default or any")
		case c.MatchType < 0 || c.MatchType > kmsg.QuotasMatchTypeAny:
			return fail(kerr.InvalidRequest.Code, fmt.Sprintf("unknown match type %d", c.MatchType))
		}
	}
	cfg := s.quota.config()
	if cfg == nil {
		return resp
	}
	for _, q := range cfg.list() {
		if !quotaMatches(q.Entity, r.Components, r.Strict) {
			continue
		}
		var entry kmsg.DescribeClientQuotasResponseEntry
		for _, p := range entityParts(q.Entity) {
			entry.Entity = append(entry.Entity, kmsg.DescribeClientQuotasResponseEntryEntity{Type: p.typ, Name: p.name})
		}
		for _, k := range quotaKeys {
			if v, ok := q.Values[k]; ok {
				entry.Values = append(entry.Values, kmsg.DescribeClientQuotasResponseEntryValue{Key: k, Value: v})
			}
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp
}

// entityParts is an entity as the protocol lists it, user first.
func entityParts(e QuotaEntity) []entityPart {
	var out []entityPart
	add := func(typ, name string, def bool) {
		switch {
		case def:
			out = append(out, entityPart{typ, nil})
		case name != "":
			out = append(out, entityPart{typ, &name})
		}
	}
	add(QuotaEntityUser, e.User, e.DefaultUser)
	add(QuotaEntityClientID, e.ClientID, e.DefaultClientID)
	return out
}

// quotaMatches is KIP-546's filter: every component matches the entity's
// part of its type (exact name, the default, or any), and with strict the
// entity has no part the components do not name.
func quotaMatches(e QuotaEntity, comps []kmsg.DescribeClientQuotasRequestComponent, strict bool) bool {
	parts := entityParts(e)
	for _, c := range comps {
		i := slices.IndexFunc(parts, func(p entityPart) bool {
			return p.typ == c.EntityType
		})
		if i < 0 {
			return false
		}
		p := parts[i]
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if p.name == nil || *p.name != *c.Match {
				return false
			}
		case kmsg.QuotasMatchTypeDefault:
			if p.name != nil {
				return false
			}
		}
	}
	return !strict || len(parts) == len(comps)
}

func (s *Server) alterClientQuotas(ctx context.Context, r *kmsg.AlterClientQuotasRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	var changes []ClientQuotaChange
	var at []int // the response entry of each change
	for _, e := range r.Entries {
		var re kmsg.AlterClientQuotasResponseEntry
		var parts []entityPart
		for _, p := range e.Entity {
			re.Entity = append(re.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: p.Type, Name: p.Name})
			parts = append(parts, entityPart{p.Type, p.Name})
		}
		resp.Entries = append(resp.Entries, re)
		entity, err := quotaEntityOf(parts)
		ch := ClientQuotaChange{Entity: entity, Set: map[string]float64{}}
		for _, op := range e.Ops {
			if op.Remove {
				ch.Remove = append(ch.Remove, op.Key)
			} else if _, dup := ch.Set[op.Key]; dup {
				ch.Remove = append(ch.Remove, op.Key) // refused below as twice
			} else {
				ch.Set[op.Key] = op.Value
			}
		}
		if err == nil {
			if cerr := CheckQuotaChange(ch); cerr != nil {
				err = refuse(kerr.InvalidRequest, cerr.Error())
			}
		}
		if err != nil {
			setQuotaError(&resp.Entries[len(resp.Entries)-1], err)
			continue
		}
		changes = append(changes, ch)
		at = append(at, len(resp.Entries)-1)
	}
	if r.ValidateOnly || len(changes) == 0 {
		return resp
	}
	var err error
	switch qc, ok := s.cluster.(QuotaCluster); {
	case s.localQuotas != nil:
		err = s.localQuotas.Alter(changes)
	case ok:
		actx, cancel := adminContext(ctx, 0)
		err = qc.AlterClientQuotas(actx, changes)
		cancel()
	default:
		err = refuse(kerr.UnsupportedVersion, "this cluster does not hold client quotas")
	}
	if err != nil {
		s.logger.Warn("server: altering client quotas", "err", err)
		for _, i := range at {
			setQuotaError(&resp.Entries[i], err)
		}
	}
	return resp
}

func setQuotaError(re *kmsg.AlterClientQuotasResponseEntry, err error) {
	var qr *quotaRefusal
	if errors.As(err, &qr) {
		re.ErrorCode = qr.code
	} else if re.ErrorCode = errCode(err); re.ErrorCode == 0 || re.ErrorCode == kerr.UnknownServerError.Code {
		re.ErrorCode = kerr.UnknownServerError.Code
	}
	msg := err.Error()
	re.ErrorMessage = &msg
}
