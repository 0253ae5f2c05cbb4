package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SCRAM credentials through the Kafka protocol (KIP-554), as
// kafka-configs.sh --entity-type users and kadm use them. Describing
// needs DESCRIBE on the cluster and changing ALTER, checked before these
// run (acl_authorize.go, docs/security.md).

// describeUserSCRAM lists the iterations of the SCRAM credentials of the
// users asked for, or of every user for none; PLAIN credentials are not
// SCRAM's and are not shown.
func (s *Server) describeUserSCRAM(r *kmsg.DescribeUserSCRAMCredentialsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	resp.SetVersion(r.Version)
	byUser := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	var order []string
	for _, cr := range s.cfg.SASL.Credentials.List() {
		code := mechanismCode(cr.Mechanism)
		if code == 0 {
			continue
		}
		if _, ok := byUser[cr.User]; !ok {
			order = append(order, cr.User)
		}
		byUser[cr.User] = append(byUser[cr.User], kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{
			Mechanism: code, Iterations: int32(cr.Iterations)})
	}
	if len(r.Users) == 0 {
		for _, u := range order {
			resp.Results = append(resp.Results, kmsg.DescribeUserSCRAMCredentialsResponseResult{User: u, CredentialInfos: byUser[u]})
		}
		return resp
	}
	seen := map[string]int{}
	for _, u := range r.Users {
		seen[u.Name]++
	}
	for _, u := range r.Users {
		res := kmsg.DescribeUserSCRAMCredentialsResponseResult{User: u.Name}
		switch infos, ok := byUser[u.Name]; {
		case seen[u.Name] > 1:
			res.ErrorCode = kerr.DuplicateResource.Code
		case !ok:
			res.ErrorCode = kerr.ResourceNotFound.Code
			msg := "no SCRAM credential for user " + u.Name
			res.ErrorMessage = &msg
		default:
			res.CredentialInfos = infos
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}

// alterUserSCRAM applies deletions and upsertions, answering per user. A
// user named twice in one request is refused, as Kafka does. In a
// cluster each change goes through the controller and is answered once
// this node has applied it, so a login here right after finds it.
func (s *Server) alterUserSCRAM(r *kmsg.AlterUserSCRAMCredentialsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	resp.SetVersion(r.Version)
	creds := s.cfg.SASL.Credentials
	ctx, cancel := adminContext(s.ctx, 0)
	defer cancel()
	count := map[string]int{}
	var order []string
	note := func(u string) {
		if count[u] == 0 {
			order = append(order, u)
		}
		count[u]++
	}
	for _, d := range r.Deletions {
		note(d.Name)
	}
	for _, u := range r.Upsertions {
		note(u.Name)
	}
	errs := map[string]error{}
	for _, d := range r.Deletions {
		if count[d.Name] > 1 {
			continue
		}
		mech, err := mechanismOfCode(d.Mechanism)
		if err != nil {
			errs[d.Name] = kerr.UnsupportedSaslMechanism
			continue
		}
		if found, err := creds.Remove(ctx, d.Name, mech); err != nil {
			errs[d.Name] = err
		} else if !found {
			errs[d.Name] = kerr.ResourceNotFound
		}
	}
	for _, u := range r.Upsertions {
		if count[u.Name] > 1 {
			continue
		}
		mech, err := mechanismOfCode(u.Mechanism)
		if err != nil {
			errs[u.Name] = kerr.UnsupportedSaslMechanism
			continue
		}
		if cr, err := saltedCredential(u.Name, mech, u.Salt, u.SaltedPassword, int(u.Iterations)); err != nil {
			errs[u.Name] = &unacceptable{err}
		} else if err := creds.Put(ctx, cr); err != nil {
			errs[u.Name] = err
		}
	}
	for _, u := range order {
		res := kmsg.AlterUserSCRAMCredentialsResponseResult{User: u}
		err := errs[u]
		if count[u] > 1 {
			err = kerr.DuplicateResource
		}
		if err != nil {
			msg := err.Error()
			res.ErrorMessage = &msg
			switch e := err.(type) {
			case *kerr.Error:
				res.ErrorCode = e.Code
			case *unacceptable:
				res.ErrorCode = kerr.UnacceptableCredential.Code
			default:
				// In a cluster: no controller, or none in time.
				if code := clusterErrCode(err); code != 0 {
					res.ErrorCode = code
					break
				}
				res.ErrorCode = kerr.UnknownServerError.Code
				s.logger.Error("server: writing SASL credentials", "err", err)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}

// unacceptable is a credential refused for its content (too few
// iterations, an empty name), not for a failure to store it.
type unacceptable struct{ err error }

func (e *unacceptable) Error() string { return e.err.Error() }
