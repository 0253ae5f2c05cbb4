package server

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Client quotas (KIP-13, KIP-55, KIP-124, KIP-219): byte rates for
// produce and fetch and a share of request-handling time, per user (the
// SASL principal), client id, or both, with defaults for each. How they
// are measured and enforced is Kafka's: docs/quotas.md.

// The quota keys, Kafka's names (QuotaConfigs).
const (
	// QuotaProducerByteRate bounds the bytes per second of a client's
	// Produce requests.
	QuotaProducerByteRate = "producer_byte_rate"
	// QuotaConsumerByteRate bounds the bytes per second of a client's
	// Fetch responses.
	QuotaConsumerByteRate = "consumer_byte_rate"
	// QuotaRequestPercentage bounds the share of one thread's time spent
	// handling a client's requests, in percent (100 is one whole thread).
	QuotaRequestPercentage = "request_percentage"
)

// The entity types of a quota, Kafka's names (ClientQuotaEntity).
const (
	// QuotaEntityUser is the SASL principal's name.
	QuotaEntityUser = "user"
	// QuotaEntityClientID is the client id of a request's header.
	QuotaEntityClientID = "client-id"
)

// quotaKind indexes a key's value and its measured rates.
type quotaKind int

const (
	quotaProduce quotaKind = iota
	quotaFetch
	quotaRequest
	numQuotaKinds
)

var quotaKeys = [numQuotaKinds]string{QuotaProducerByteRate, QuotaConsumerByteRate, QuotaRequestPercentage}

func quotaKindOf(key string) (quotaKind, bool) {
	i := slices.Index(quotaKeys[:], key)
	return quotaKind(i), i >= 0
}

// QuotaEntity names whom a quota applies to: a user part, a client-id
// part, or both. Each part is absent, a name, or the default (which
// applies to every user or client id without a quota of its own). Names
// are never empty, so an empty name with its Default flag false is an
// absent part.
type QuotaEntity struct {
	// User is the user's name; "" for none or the default.
	User string
	// DefaultUser makes the user part the default user.
	DefaultUser bool
	// ClientID is the client id; "" for none or the default.
	ClientID string
	// DefaultClientID makes the client-id part the default client id.
	DefaultClientID bool
}

func (e QuotaEntity) hasUser() bool   { return e.User != "" || e.DefaultUser }
func (e QuotaEntity) hasClient() bool { return e.ClientID != "" || e.DefaultClientID }

// String is the entity as Kafka's tools write it.
func (e QuotaEntity) String() string {
	var parts []string
	part := func(typ, name string, def bool) {
		switch {
		case def:
			parts = append(parts, typ+"=<default>")
		case name != "":
			parts = append(parts, typ+"="+name)
		}
	}
	part(QuotaEntityUser, e.User, e.DefaultUser)
	part(QuotaEntityClientID, e.ClientID, e.DefaultClientID)
	return "{" + strings.Join(parts, ", ") + "}"
}

// ClientQuota is one entity's quotas by key.
type ClientQuota struct {
	// Entity is whom the quotas apply to.
	Entity QuotaEntity
	// Values are the quotas by key (QuotaProducerByteRate, ...).
	Values map[string]float64
}

// ClientQuotaChange alters one entity's quotas: Set's keys take their
// values, Remove's keys go back to no quota.
type ClientQuotaChange struct {
	// Entity is whose quotas change.
	Entity QuotaEntity
	// Set holds the keys to set and their values.
	Set map[string]float64
	// Remove holds the keys to remove.
	Remove []string
}

// maxQuotaName bounds a user or client id in a quota: Kafka's client ids
// are short, and the bound keeps a change (and the metadata holding it)
// small.
const maxQuotaName = 1024

// CheckQuotaChange refuses a change Kafka would refuse: an entity with no
// part, a name empty, too long or not UTF-8, a part both named and the
// default, a key other than the three, a key both set and removed or
// named twice, a value not above zero, or a byte rate that is not a whole
// number. Both the single node and a cluster's controller apply only
// changes it accepts.
func CheckQuotaChange(c ClientQuotaChange) error {
	e := c.Entity
	if !e.hasUser() && !e.hasClient() {
		return fmt.Errorf("invalid empty client quota entity")
	}
	for _, p := range []struct {
		typ, name string
		def       bool
	}{{QuotaEntityUser, e.User, e.DefaultUser}, {QuotaEntityClientID, e.ClientID, e.DefaultClientID}} {
		if p.def && p.name != "" {
			return fmt.Errorf("%s both named and the default", p.typ)
		}
		if len(p.name) > maxQuotaName || !utf8.ValidString(p.name) {
			return fmt.Errorf("%s of %d bytes: want 1 to %d bytes of UTF-8", p.typ, len(p.name), maxQuotaName)
		}
	}
	seen := map[string]bool{}
	for _, k := range slices.Concat(slices.Sorted(maps.Keys(c.Set)), c.Remove) {
		if _, ok := quotaKindOf(k); !ok {
			return fmt.Errorf("invalid configuration key %q (one of %s)", k, strings.Join(quotaKeys[:], ", "))
		}
		if seen[k] {
			return fmt.Errorf("configuration key %s altered twice", k)
		}
		seen[k] = true
	}
	for k, v := range c.Set {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0) || v <= 0:
			return fmt.Errorf("invalid value %v for %s: a quota is above zero", v, k)
		case k != QuotaRequestPercentage && (v != math.Trunc(v) || v > math.MaxInt64):
			return fmt.Errorf("invalid value %v for %s: a byte rate is a whole number", v, k)
		}
	}
	return nil
}

// quotaValues are one entity's quotas by kind; 0 is none.
type quotaValues [numQuotaKinds]float64

// quotaConfig is every entity's quotas: a value, never modified once
// built, so a request reads it without a lock.
type quotaConfig struct {
	entities map[QuotaEntity]quotaValues
}

func newQuotaConfig(list []ClientQuota) *quotaConfig {
	c := &quotaConfig{entities: make(map[QuotaEntity]quotaValues, len(list))}
	for _, q := range list {
		var v quotaValues
		for k, x := range q.Values {
			if i, ok := quotaKindOf(k); ok {
				v[i] = x
			}
		}
		if v != (quotaValues{}) {
			c.entities[q.Entity] = v
		}
	}
	return c
}

// list returns the quotas sorted by entity, as Describe answers them.
func (c *quotaConfig) list() []ClientQuota {
	out := make([]ClientQuota, 0, len(c.entities))
	for e, v := range c.entities {
		q := ClientQuota{Entity: e, Values: map[string]float64{}}
		for i, x := range v {
			if x != 0 {
				q.Values[quotaKeys[i]] = x
			}
		}
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b ClientQuota) int { return strings.Compare(a.Entity.String(), b.Entity.String()) })
	return out
}

// apply returns the config after changes, which CheckQuotaChange accepted.
func (c *quotaConfig) apply(changes []ClientQuotaChange) *quotaConfig {
	n := &quotaConfig{entities: maps.Clone(c.entities)}
	for _, ch := range changes {
		v := n.entities[ch.Entity]
		for k, x := range ch.Set {
			i, _ := quotaKindOf(k)
			v[i] = x
		}
		for _, k := range ch.Remove {
			i, _ := quotaKindOf(k)
			v[i] = 0
		}
		if v == (quotaValues{}) {
			delete(n.entities, ch.Entity)
		} else {
			n.entities[ch.Entity] = v
		}
	}
	return n
}

// sensorKey is what a rate is measured per: Kafka's quota metric tags.
// Entities at different precedence levels share a rate when their tags
// agree: every client id of a user with only a user quota shares the
// user's.
type sensorKey struct {
	kind           quotaKind
	user, clientID string
}

// resolve finds the quota of kind for a request by user (the SASL
// principal, "" without SASL, when only client-id quotas apply) and
// client id, by Kafka's precedence (DefaultQuotaCallback):
//
//  1. user and client id      5. default user and default client id
//  2. user and default client 6. default user
//  3. user                    7. client id
//  4. default user and client 8. default client id
//
// It returns the bound and the rate it is measured against; ok is false
// when no quota applies.
func (c *quotaConfig) resolve(kind quotaKind, user, clientID string) (sensorKey, float64, bool) {
	try := func(e QuotaEntity) (float64, bool) {
		v, ok := c.entities[e]
		return v[kind], ok && v[kind] != 0
	}
	both := sensorKey{kind, user, clientID}
	userOnly := sensorKey{kind, user, ""}
	if user != "" {
		// Without a client id only the user's own levels apply, as in
		// Kafka's quotaLimit.
		levels := []struct {
			e   QuotaEntity
			key sensorKey
		}{
			{QuotaEntity{User: user, ClientID: clientID}, both},
			{QuotaEntity{User: user, DefaultClientID: true}, both},
			{QuotaEntity{User: user}, userOnly},
			{QuotaEntity{DefaultUser: true, ClientID: clientID}, both},
			{QuotaEntity{DefaultUser: true, DefaultClientID: true}, both},
			{QuotaEntity{DefaultUser: true}, userOnly},
		}
		for _, l := range levels {
			if clientID == "" && l.e.hasClient() {
				continue
			}
			if b, ok := try(l.e); ok {
				return l.key, b, true
			}
		}
		if clientID == "" {
			return sensorKey{}, 0, false
		}
	}
	if clientID == "" {
		// Kafka's quotaLimit finds nothing for empty tags.
		return sensorKey{}, 0, false
	}
	key := sensorKey{kind, "", clientID}
	if b, ok := try(QuotaEntity{ClientID: clientID}); ok {
		return key, b, true
	}
	if b, ok := try(QuotaEntity{DefaultClientID: true}); ok {
		return key, b, true
	}
	return sensorKey{}, 0, false
}

// quotaManager measures every client's rates and computes throttles. The
// config comes from the store's quotas file on a single node and from the
// replicated metadata in a cluster (config).
type quotaManager struct {
	clk clock
	// config returns the quotas in force; nil means none.
	config func() *quotaConfig

	mu    sync.Mutex
	rates map[sensorKey]*quotaRate
	swept int // len(rates) after the last sweep of idle rates

	quotaCounters
}

func newQuotaManager(clk clock, config func() *quotaConfig) *quotaManager {
	return &quotaManager{clk: clk, config: config, rates: make(map[sensorKey]*quotaRate)}
}

// nowMs is the clock in milliseconds, Kafka's timeMs.
func (m *quotaManager) nowMs() int64 { return m.clk.Now().UnixMilli() }

// enabled reports whether any quota is configured; without one nothing is
// measured, as in Kafka.
func (m *quotaManager) enabled() (*quotaConfig, bool) {
	c := m.config()
	return c, c != nil && len(c.entities) > 0
}

// record adds value to the rate of kind for user and client id at now and
// returns the throttle in milliseconds (0 within quota), as Kafka's
// maybeRecordAndGetThrottleTimeMs: the value counts even when over quota.
func (m *quotaManager) record(kind quotaKind, user, clientID string, value float64, now int64) int64 {
	c, ok := m.enabled()
	if !ok {
		return 0
	}
	key, bound, ok := c.resolve(kind, user, clientID)
	if !ok {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rateLocked(key, now)
	r.record(value, now)
	t := throttleMs(r.measure(now), bound, r.windowMs(now))
	if kind == quotaRequest {
		t = min(t, maxRequestThrottleMs)
	}
	return t
}

// unrecord takes back a recorded value without checking the quota: a
// fetch answered empty because it is throttled sent none of its bytes
// (Kafka's unrecordQuotaSensor).
func (m *quotaManager) unrecord(kind quotaKind, user, clientID string, value float64, now int64) {
	c, ok := m.enabled()
	if !ok {
		return
	}
	key, _, ok := c.resolve(kind, user, clientID)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rateLocked(key, now).record(-value, now)
}

// maxFetchBytes bounds a fetch by what the consumer's quota allows in the
// measured windows but one (Kafka's getMaxValueInQuotaWindow), so one
// response does not earn a throttle many windows long.
func (m *quotaManager) maxFetchBytes(user, clientID string) (int64, bool) {
	c, ok := m.enabled()
	if !ok {
		return 0, false
	}
	_, bound, ok := c.resolve(quotaFetch, user, clientID)
	if !ok {
		return 0, false
	}
	b := bound * (quotaWindowNum - 1) * quotaWindowSize.Seconds()
	return int64(min(b, math.MaxInt32)), true
}

// rateLocked returns key's rate, made on first use. Rates every sample of
// which has expired are dropped when the map has doubled since the last
// sweep: they measure zero, as a new one does, so memory follows the
// clients active in the last measurement, not every client id ever seen.
func (m *quotaManager) rateLocked(key sensorKey, now int64) *quotaRate {
	r, ok := m.rates[key]
	if ok {
		return r
	}
	if len(m.rates) >= 2*max(m.swept, 64) {
		for k, r := range m.rates {
			if r.idle(now) {
				delete(m.rates, k)
			}
		}
		m.swept = len(m.rates)
	}
	r = &quotaRate{}
	m.rates[key] = r
	return r
}

// requestPercentage converts handling time to request_percentage's unit
// (Kafka's nanosToPercentage): a second of one thread's time is 100.
func requestPercentage(d time.Duration) float64 {
	return float64(d) * 100 / float64(time.Second)
}
