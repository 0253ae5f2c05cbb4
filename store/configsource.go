package store

// ConfigSource says where a topic config's value comes from, in the terms
// of Kafka's DescribeConfigs.
type ConfigSource int8

const (
	// SourceDefault is Kafka's default value, inherited.
	SourceDefault ConfigSource = iota
	// SourceBroker is a value the topic inherited from the broker-level
	// default it was created under (seglog serve --config): Kafka's
	// STATIC_BROKER_CONFIG.
	SourceBroker
	// SourceTopic is a value set on the topic itself (at creation or by an
	// alter): Kafka's DYNAMIC_TOPIC_CONFIG.
	SourceTopic
)

// String names the source as Kafka's DescribeConfigs does, which is how
// `seglog topics describe` prints it.
func (s ConfigSource) String() string {
	switch s {
	case SourceTopic:
		return "DYNAMIC_TOPIC_CONFIG"
	case SourceBroker:
		return "STATIC_BROKER_CONFIG"
	}
	return "DEFAULT_CONFIG"
}

// IsKey says whether key is a topic config a TopicConfig carries.
func IsKey(key string) bool { return keyBit(key) != 0 }

// IsSet says whether key was set on this config by name (Set), rather
// than inherited from the config it started from.
func (c TopicConfig) IsSet(key string) bool { return c.set&keyBit(key) != 0 }

// Source says where key's value comes from: set on the topic; else Kafka's
// default when it has that value; else the broker-level default the topic
// was created under. `seglog topics describe` and the server's
// DescribeConfigs both answer from here.
func (c TopicConfig) Source(key string) ConfigSource {
	switch {
	case c.IsSet(key):
		return SourceTopic
	case c.Get(key) == DefaultTopicConfig().Get(key):
		return SourceDefault
	}
	return SourceBroker
}

// Unset gives key base's value again and marks it as not set: Kafka's
// "delete a topic config" (back to the default). An unknown key is an
// error matching ErrInvalidConfig.
func (c *TopicConfig) Unset(key string, base TopicConfig) error {
	if !IsKey(key) {
		return errUnknownKey(key)
	}
	if err := c.assign(key, base.Get(key)); err != nil {
		return err
	}
	c.set &^= keyBit(key)
	return nil
}

// Inherited is c as the default of new topics: its values, none of them
// marked as set, so that a topic created from it (then Set) tells its own
// settings from what it inherited.
func (c TopicConfig) Inherited() TopicConfig {
	c.set = 0
	return c
}

// Overrides lists the keys set on the config, in Keys' order.
func (c TopicConfig) Overrides() []string {
	var out []string
	for _, k := range configKeys {
		if c.IsSet(k) {
			out = append(out, k)
		}
	}
	return out
}

// markDiffering marks as set the keys whose value is not Kafka's default:
// what a topic file written before seglog recorded its overrides is
// taken to have set.
func (c *TopicConfig) markDiffering() {
	def := DefaultTopicConfig()
	c.set = 0
	for _, k := range configKeys {
		if c.Get(k) != def.Get(k) {
			c.set |= keyBit(k)
		}
	}
}
