package server

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	produceKey     = 0
	apiVersionsKey = 18
	apiVersionsMax = 3
)

// advertised is what the server itself answers (the group coordinator adds
// its own keys). The ranges follow the reference's recommended
// advertisement: Produce from v0, because librdkafka sends compressed
// batches only to a broker whose Produce range starts there, though v0–2
// are refused when used (as Kafka does since KAFKA-18659); Fetch from v4
// (the first with a last stable offset). The maxima stop before the
// versions that address topics by id (Produce v13, Fetch v13), which
// clients fall back from without trouble.
var advertised = []kmsg.ApiVersionsResponseApiKey{
	{ApiKey: 0, MinVersion: 0, MaxVersion: 12}, // Produce
	{ApiKey: 1, MinVersion: 4, MaxVersion: 12}, // Fetch
	{ApiKey: 2, MinVersion: 0, MaxVersion: 11}, // ListOffsets
	{ApiKey: 3, MinVersion: 0, MaxVersion: 12}, // Metadata
	{ApiKey: 18, MinVersion: 0, MaxVersion: 3}, // ApiVersions
	{ApiKey: 19, MinVersion: 0, MaxVersion: 7}, // CreateTopics
	{ApiKey: 20, MinVersion: 0, MaxVersion: 5}, // DeleteTopics
	{ApiKey: 21, MinVersion: 0, MaxVersion: 2}, // DeleteRecords
	{ApiKey: 22, MinVersion: 0, MaxVersion: 4}, // InitProducerId
	{ApiKey: 23, MinVersion: 0, MaxVersion: 4}, // OffsetForLeaderEpoch
	{ApiKey: 29, MinVersion: 0, MaxVersion: 3}, // DescribeAcls
	{ApiKey: 30, MinVersion: 0, MaxVersion: 3}, // CreateAcls
	{ApiKey: 31, MinVersion: 0, MaxVersion: 3}, // DeleteAcls
	{ApiKey: 32, MinVersion: 0, MaxVersion: 4}, // DescribeConfigs
	{ApiKey: 33, MinVersion: 0, MaxVersion: 2}, // AlterConfigs
	{ApiKey: 35, MinVersion: 0, MaxVersion: 4}, // DescribeLogDirs
	{ApiKey: 37, MinVersion: 0, MaxVersion: 3}, // CreatePartitions
	{ApiKey: 43, MinVersion: 0, MaxVersion: 2}, // ElectLeaders
	{ApiKey: 44, MinVersion: 0, MaxVersion: 1}, // IncrementalAlterConfigs
	{ApiKey: 48, MinVersion: 0, MaxVersion: 1}, // DescribeClientQuotas
	{ApiKey: 49, MinVersion: 0, MaxVersion: 1}, // AlterClientQuotas
	{ApiKey: 60, MinVersion: 0, MaxVersion: 1}, // DescribeCluster
}

// apiKeys is the full advertisement: the server's keys, the security
// ones in use (sasl.go) and the coordinator's, sorted by key. A key both
// list keeps the server's range.
func apiKeys(coord *coordinator, security ...kmsg.ApiVersionsResponseApiKey) []kmsg.ApiVersionsResponseApiKey {
	keys := append(slices.Clone(advertised), security...)
	if coord != nil {
		for _, k := range coord.apiKeys() {
			if !slices.ContainsFunc(keys, func(a kmsg.ApiVersionsResponseApiKey) bool { return a.ApiKey == k.ApiKey }) {
				keys = append(keys, k)
			}
		}
	}
	slices.SortFunc(keys, func(a, b kmsg.ApiVersionsResponseApiKey) int { return int(a.ApiKey) - int(b.ApiKey) })
	return keys
}

// supports says whether the server (or its coordinator) speaks key at
// version.
func (s *Server) supports(coord *coordinator, key, version int16) bool {
	for _, k := range advertised {
		if k.ApiKey == key {
			return version >= k.MinVersion && version <= k.MaxVersion
		}
	}
	for _, k := range s.securityKeys() {
		if k.ApiKey == key {
			return version >= k.MinVersion && version <= k.MaxVersion
		}
	}
	if coord != nil {
		for _, k := range coord.apiKeys() {
			if k.ApiKey == key {
				return version >= k.MinVersion && version <= k.MaxVersion
			}
		}
	}
	return false
}

func (s *Server) apiVersions(coord *coordinator, req *kmsg.ApiVersionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.SetVersion(req.Version)
	resp.ApiKeys = apiKeys(coord, s.securityKeys()...)
	resp.FinalizedFeaturesEpoch = -1
	return resp
}

// downgradeApiVersions is the reply to an ApiVersions request above our
// maximum: a v0 response with UNSUPPORTED_VERSION listing only ApiVersions'
// own range, after which both kgo and librdkafka retry at a version we
// speak (KIP-511).
func downgradeApiVersions() kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: apiVersionsKey, MinVersion: 0, MaxVersion: apiVersionsMax}}
	return resp
}
