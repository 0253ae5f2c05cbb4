package server

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/store"
)

// The config admin APIs (docs/serve.md, "Configs"): DescribeConfigs for
// topics and this broker, AlterConfigs and IncrementalAlterConfigs for
// topics. store.TopicConfig owns the topic configs, their parsing,
// validation and where each value comes from; this file only speaks the
// protocol.

// topicConfigMeta is what the protocol says of a topic config beside its
// value: its type (DescribeConfigs v3+) and its broker-level synonyms,
// from the store's table of configs (store.KeyInfo).
type topicConfigMeta struct {
	typ kmsg.ConfigType
	store.ConfigInfo
}

// metaOf is the protocol's facts of topic config key, one of store.Keys.
func metaOf(key string) topicConfigMeta {
	info, _ := store.KeyInfo(key)
	// An unknown type name is ConfigTypeUnknown (0); the store's table
	// names only Kafka's (TestTopicConfigTypes).
	typ, _ := kmsg.ParseConfigType(info.Type)
	return topicConfigMeta{typ, info}
}

// defaultSynonym is the DEFAULT_CONFIG synonym Kafka lists for the topic
// config.
func (m topicConfigMeta) defaultSynonym() synonym {
	if m.DefaultSynonym != "" {
		return synonym{m.DefaultSynonym, m.DefaultSynonymValue, kmsg.ConfigSourceDefaultConfig}
	}
	return synonym{m.BrokerConfig, m.Default, kmsg.ConfigSourceDefaultConfig}
}

// configError is a per-resource refusal with its Kafka error code.
type configError struct {
	code int16
	msg  string
}

func (e *configError) Error() string { return e.msg }

func invalidRequest(format string, args ...any) error {
	return &configError{kerr.InvalidRequest.Code, fmt.Sprintf(format, args...)}
}

func invalidConfig(format string, args ...any) error {
	return &configError{kerr.InvalidConfig.Code, fmt.Sprintf(format, args...)}
}

// configErrCode maps an error of a config resource to its code.
func configErrCode(err error) int16 {
	var ce *configError
	switch {
	case errors.As(err, &ce):
		return ce.code
	case errors.Is(err, store.ErrInternalTopic):
		// Kafka would take it; seglog keeps the offsets topic's config
		// its own (compacted, every commit synced), as a policy.
		return kerr.PolicyViolation.Code
	}
	return errCode(err)
}

// wanted says whether a config is among those asked for (nil: all).
func wanted(names []string, name string) bool {
	return names == nil || slices.Contains(names, name)
}

// describeConfigs answers DescribeConfigs: every topic config the store
// keeps, or this broker's configs, each with its source and, when asked,
// its synonyms. A resource that cannot be described gets its own error.
func (s *Server) describeConfigs(req *kmsg.DescribeConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, r := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		var err error
		switch r.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			rr.Configs, err = s.describeTopicConfigs(req, r)
		case kmsg.ConfigResourceTypeBroker:
			rr.Configs, err = s.describeBrokerConfigs(req, r)
		default:
			err = invalidRequest("resource type %v is not served: seglog describes TOPIC and BROKER configs", r.ResourceType)
		}
		if err != nil {
			rr.ErrorCode = configErrCode(err)
			rr.ErrorMessage = kmsg.StringPtr(err.Error())
			rr.Configs = nil
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// synonym is one entry of a config's synonyms, most specific first.
type synonym struct {
	name, value string
	source      kmsg.ConfigSource
}

func configEntry(req *kmsg.DescribeConfigsRequest, name, value string, readOnly bool, typ kmsg.ConfigType, syns []synonym) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = name
	c.Value = kmsg.StringPtr(value)
	c.ReadOnly = readOnly
	c.Source = kmsg.ConfigSourceDefaultConfig
	if len(syns) > 0 {
		c.Source = syns[0].source
	}
	c.IsDefault = c.Source == kmsg.ConfigSourceDefaultConfig // v0's flag
	c.ConfigType = typ
	if req.IncludeSynonyms {
		for _, s := range syns {
			cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			cs.Name, cs.Value, cs.Source = s.name, kmsg.StringPtr(s.value), s.source
			c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
		}
	}
	return c
}

func (s *Server) describeTopicConfigs(req *kmsg.DescribeConfigsRequest, r kmsg.DescribeConfigsRequestResource) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	if err := store.ValidateTopic(r.ResourceName); err != nil {
		return nil, err
	}
	cfg, err := s.st.TopicConfigOf(r.ResourceName)
	if err != nil {
		return nil, err
	}
	broker := s.cfg.TopicConfig
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, k := range store.Keys() {
		if !wanted(r.ConfigNames, k) {
			continue
		}
		m := metaOf(k)
		src := cfg.Source(k)
		var syns []synonym
		switch src {
		case store.SourceTopic:
			syns = append(syns, synonym{k, cfg.Get(k), kmsg.ConfigSourceDynamicTopicConfig})
			if broker.Source(k) != store.SourceDefault {
				syns = append(syns, synonym{m.BrokerConfig, broker.Get(k), kmsg.ConfigSourceStaticBrokerConfig})
			}
		case store.SourceBroker:
			// The broker default the topic was created under.
			syns = append(syns, synonym{m.BrokerConfig, cfg.Get(k), kmsg.ConfigSourceStaticBrokerConfig})
		}
		syns = append(syns, m.defaultSynonym())
		out = append(out, configEntry(req, k, cfg.Get(k), false, m.typ, syns))
	}
	return out, nil
}

// defaultLeaderImbalanceCheckInterval is Kafka's
// leader.imbalance.check.interval.seconds.
const defaultLeaderImbalanceCheckInterval = 300 * time.Second

// brokerConfig is one of this broker's configs: all are read-only, set by
// seglog serve's flags at start.
type brokerConfig struct {
	name, value, kafkaDefault string
	typ                       kmsg.ConfigType
	// set: given by a flag (--config) even if equal to Kafka's default.
	set bool
	// dflt is the DEFAULT_CONFIG synonym when it is not the config itself
	// (store.ConfigInfo.DefaultSynonym).
	dflt *synonym
}

func (s *Server) brokerConfigs() []brokerConfig {
	delay := s.cfg.GroupInitialRebalanceDelay
	switch {
	case delay == 0:
		delay = defaultInitialRebalanceDelay
	case delay < 0:
		delay = 0
	}
	rebalanceEvery := s.cfg.LeaderImbalanceCheckInterval
	if rebalanceEvery <= 0 {
		// Off, it keeps Kafka's default, as Kafka's does.
		rebalanceEvery = defaultLeaderImbalanceCheckInterval
	}
	offsetsParts := strconv.Itoa(store.DefaultOffsetsPartitions)
	if n, err := s.st.Partitions(store.OffsetsTopic); err == nil {
		offsetsParts = strconv.Itoa(n)
	}
	nodeID := strconv.Itoa(int(s.cfg.NodeID))
	out := []brokerConfig{
		{"node.id", nodeID, "", kmsg.ConfigTypeInt, false, nil},
		{"broker.id", nodeID, "-1", kmsg.ConfigTypeInt, false, nil},
		{"log.dirs", s.st.Dir(), "", kmsg.ConfigTypeString, false, nil},
		{"advertised.listeners", fmt.Sprintf("PLAINTEXT://%s:%d", s.host, s.port), "", kmsg.ConfigTypeString, false, nil},
		{"num.partitions", strconv.Itoa(s.cfg.NumPartitions), strconv.Itoa(DefaultNumPartitions), kmsg.ConfigTypeInt, false, nil},
		{"auto.create.topics.enable", strconv.FormatBool(s.autoCreate()), "true", kmsg.ConfigTypeBoolean, false, nil},
		{"default.replication.factor", strconv.Itoa(max(s.cfg.DefaultReplicationFactor, 1)), "1", kmsg.ConfigTypeInt, false, nil},
		{"offsets.topic.num.partitions", offsetsParts, strconv.Itoa(store.DefaultOffsetsPartitions), kmsg.ConfigTypeInt, false, nil},
		{"socket.request.max.bytes", strconv.Itoa(s.cfg.MaxRequestBytes), strconv.Itoa(DefaultMaxRequestBytes), kmsg.ConfigTypeInt, false, nil},
		{"connections.max.idle.ms", strconv.FormatInt(s.cfg.IdleTimeout.Milliseconds(), 10), strconv.FormatInt(DefaultIdleTimeout.Milliseconds(), 10), kmsg.ConfigTypeLong, false, nil},
		{"auto.leader.rebalance.enable", strconv.FormatBool(s.cfg.LeaderImbalanceCheckInterval >= 0), "true", kmsg.ConfigTypeBoolean, false, nil},
		{"leader.imbalance.check.interval.seconds", strconv.FormatInt(int64(rebalanceEvery/time.Second), 10), strconv.FormatInt(int64(defaultLeaderImbalanceCheckInterval/time.Second), 10), kmsg.ConfigTypeLong, false, nil},
		{"group.initial.rebalance.delay.ms", strconv.FormatInt(delay.Milliseconds(), 10), strconv.FormatInt(defaultInitialRebalanceDelay.Milliseconds(), 10), kmsg.ConfigTypeInt, false, nil},
	}
	for _, k := range store.Keys() {
		m := metaOf(k)
		b := brokerConfig{m.BrokerConfig, s.cfg.TopicConfig.Get(k), m.Default, m.typ, s.cfg.TopicConfig.IsSet(k), nil}
		if m.DefaultSynonym != "" {
			syn := m.defaultSynonym()
			b.dflt = &syn
		}
		out = append(out, b)
	}
	return out
}

func (s *Server) describeBrokerConfigs(req *kmsg.DescribeConfigsRequest, r kmsg.DescribeConfigsRequestResource) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	if r.ResourceName == "" {
		// The cluster-wide dynamic defaults, of which seglog keeps none:
		// Kafka answers the same for a cluster that set none.
		return []kmsg.DescribeConfigsResponseResourceConfig{}, nil
	}
	if err := s.checkBrokerName(r.ResourceName); err != nil {
		return nil, err
	}
	out := []kmsg.DescribeConfigsResponseResourceConfig{}
	for _, b := range s.brokerConfigs() {
		if !wanted(r.ConfigNames, b.name) {
			continue
		}
		var syns []synonym
		if b.set || b.value != b.kafkaDefault {
			syns = append(syns, synonym{b.name, b.value, kmsg.ConfigSourceStaticBrokerConfig})
		}
		switch {
		case b.dflt != nil:
			syns = append(syns, *b.dflt)
		case b.kafkaDefault != "":
			syns = append(syns, synonym{b.name, b.kafkaDefault, kmsg.ConfigSourceDefaultConfig})
		}
		out = append(out, configEntry(req, b.name, b.value, true, b.typ, syns))
	}
	return out, nil
}

// checkBrokerName refuses a BROKER resource naming another broker, as
// Kafka does.
func (s *Server) checkBrokerName(name string) error {
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return invalidRequest("Broker id must be an integer, but it is: %s", name)
	}
	if int32(id) != s.cfg.NodeID {
		return invalidRequest("Unexpected broker id, expected %d or empty string, but received %s", s.cfg.NodeID, name)
	}
	return nil
}

// alterTarget checks an alter's resource: a topic's name, or the error
// for anything else. seglog alters topic configs only: the broker's come
// from seglog serve's flags.
func (s *Server) alterTarget(typ kmsg.ConfigResourceType, name string, dup bool) error {
	switch {
	case dup:
		return invalidRequest("Error due to duplicate resources: %v %q appears more than once", typ, name)
	case typ == kmsg.ConfigResourceTypeTopic:
		return nil
	case typ == kmsg.ConfigResourceTypeBroker:
		if name != "" {
			if err := s.checkBrokerName(name); err != nil {
				return err
			}
		}
		return invalidRequest("broker configs are not alterable: seglog serve takes them from its flags (--config, --num-partitions, …) when it starts")
	}
	return invalidRequest("resource type %v is not served: seglog alters TOPIC configs", typ)
}

// duplicates marks the resources named more than once in one request.
func duplicates(n int, key func(i int) string) []bool {
	count := make(map[string]int, n)
	for i := range n {
		count[key(i)]++
	}
	dup := make([]bool, n)
	for i := range n {
		dup[i] = count[key(i)] > 1
	}
	return dup
}

// alterTopic runs one topic's alter through the store, which validates
// the result and stores and applies it (unless validateOnly).
func (s *Server) alterTopic(name string, validateOnly bool, f func(store.TopicConfig) (store.TopicConfig, error)) error {
	if err := store.ValidateTopic(name); err != nil {
		return err
	}
	if s.cluster != nil {
		return s.clusterAlterTopic(name, validateOnly, f)
	}
	return s.st.UpdateTopicConfig(name, validateOnly, f)
}

// alterConfigs answers AlterConfigs: each topic's config becomes exactly
// the configs listed, the others back to the broker default.
func (s *Server) alterConfigs(req *kmsg.AlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	dup := duplicates(len(req.Resources), func(i int) string {
		return fmt.Sprint(req.Resources[i].ResourceType, "/", req.Resources[i].ResourceName)
	})
	for i, r := range req.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		err := s.alterTarget(r.ResourceType, r.ResourceName, dup[i])
		if err == nil {
			err = s.alterTopic(r.ResourceName, req.ValidateOnly, func(store.TopicConfig) (store.TopicConfig, error) {
				cfg := s.cfg.TopicConfig.Inherited()
				if err := nullValues(len(r.Configs), func(i int) (string, bool) {
					return r.Configs[i].Name, r.Configs[i].Value == nil
				}); err != nil {
					return cfg, err
				}
				seen := make(map[string]bool)
				for _, c := range r.Configs {
					if seen[c.Name] {
						return cfg, invalidRequest("Error due to duplicate config keys: %s", c.Name)
					}
					seen[c.Name] = true
					if err := cfg.Set(c.Name, *c.Value); err != nil {
						return cfg, err
					}
				}
				return cfg, nil
			})
		}
		if err != nil {
			rr.ErrorCode = configErrCode(err)
			rr.ErrorMessage = kmsg.StringPtr(err.Error())
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// incrementalAlterConfigs answers IncrementalAlterConfigs: SET, DELETE
// (back to the broker default), and APPEND and SUBTRACT on list configs.
func (s *Server) incrementalAlterConfigs(req *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	dup := duplicates(len(req.Resources), func(i int) string {
		return fmt.Sprint(req.Resources[i].ResourceType, "/", req.Resources[i].ResourceName)
	})
	for i, r := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		err := s.alterTarget(r.ResourceType, r.ResourceName, dup[i])
		if err == nil {
			err = s.alterTopic(r.ResourceName, req.ValidateOnly, func(cfg store.TopicConfig) (store.TopicConfig, error) {
				return s.applyOps(cfg, r.Configs)
			})
		}
		if err != nil {
			rr.ErrorCode = configErrCode(err)
			rr.ErrorMessage = kmsg.StringPtr(err.Error())
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// applyOps applies IncrementalAlterConfigs' operations to cfg in order.
func (s *Server) applyOps(cfg store.TopicConfig, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (store.TopicConfig, error) {
	if err := nullValues(len(ops), func(i int) (string, bool) {
		return ops[i].Name, ops[i].Op != kmsg.IncrementalAlterConfigOpDelete && ops[i].Value == nil
	}); err != nil {
		return cfg, err
	}
	seen := make(map[string]bool)
	for _, c := range ops {
		if seen[c.Name] {
			return cfg, invalidRequest("Error due to duplicate config keys: %s", c.Name)
		}
		seen[c.Name] = true
		var err error
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			err = cfg.Set(c.Name, *c.Value)
		case kmsg.IncrementalAlterConfigOpDelete:
			err = cfg.Unset(c.Name, *s.cfg.TopicConfig)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if !store.IsKey(c.Name) {
				return cfg, invalidConfig("unknown config %q", c.Name)
			}
			if metaOf(c.Name).typ != kmsg.ConfigTypeList {
				return cfg, invalidConfig("Config value %s is not allowed for config key: %s (not a list)", strings.ToLower(c.Op.String()), c.Name)
			}
			err = cfg.Set(c.Name, editList(cfg.Get(c.Name), *c.Value, c.Op == kmsg.IncrementalAlterConfigOpAppend))
		default:
			return cfg, invalidRequest("%s: unknown operation %d", c.Name, c.Op)
		}
		if err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// nullValues refuses a resource whose configs (n of them, named and
// judged by at) include a value left null where one is needed, naming them
// all: INVALID_REQUEST in Kafka's words, before anything else is checked
// (its ConfigAdminManager.preprocess, for AlterConfigs and
// IncrementalAlterConfigs alike).
func nullValues(n int, at func(i int) (name string, null bool)) error {
	var names []string
	for i := range n {
		if name, null := at(i); null {
			names = append(names, name)
		}
	}
	if names != nil {
		return invalidRequest("Null value not supported for : %s", strings.Join(names, ", "))
	}
	return nil
}

// editList appends to or subtracts from a comma-separated list config,
// as Kafka does: an appended item already there is not repeated.
func editList(cur, items string, add bool) string {
	var list []string
	for _, v := range strings.Split(cur, ",") {
		if v = strings.TrimSpace(v); v != "" {
			list = append(list, v)
		}
	}
	for _, v := range strings.Split(items, ",") {
		v = strings.TrimSpace(v)
		switch {
		case v == "":
		case add && !slices.Contains(list, v):
			list = append(list, v)
		case !add:
			list = slices.DeleteFunc(list, func(x string) bool { return x == v })
		}
	}
	return strings.Join(list, ",")
}
