package aws

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

type listener struct {
	arn          string
	lbARN        string
	protocol     string
	port         int
	actions      []action
	sslPolicy    string
	certificates []string
	tags         map[string]string
}

// action is a forward action; the only kind a CCM creates.
type action struct {
	order        int
	targetGroups []weightedTG
}

type weightedTG struct {
	arn    string
	weight int
}

func (l *listener) forwardsTo(tgARN string) bool {
	for _, a := range l.actions {
		for _, tg := range a.targetGroups {
			if tg.arn == tgARN {
				return true
			}
		}
	}
	return false
}

// listenerTGProtocols says which target group protocols a listener
// protocol may forward to; anything else is IncompatibleProtocols.
var listenerTGProtocols = map[string][]string{
	"TCP":     {"TCP", "TCP_UDP"},
	"UDP":     {"UDP", "TCP_UDP"},
	"TCP_UDP": {"TCP_UDP"},
	"TLS":     {"TCP", "TLS"},
	"HTTP":    {"HTTP", "HTTPS"},
	"HTTPS":   {"HTTP", "HTTPS"},
}

func parseActions(p params) ([]action, error) {
	specs := p.structs("DefaultActions.member")
	if len(specs) == 0 {
		return nil, validation("At least one default action must be specified")
	}
	var out []action
	for i, s := range specs {
		if t := s.get("Type"); t != "forward" {
			return nil, validation("Action type '%s' is not supported by cloudsim; use forward", t)
		}
		a := action{order: i + 1}
		if n, ok, _ := s.intParam("Order"); ok {
			a.order = n
		}
		if arn := s.get("TargetGroupArn"); arn != "" {
			a.targetGroups = append(a.targetGroups, weightedTG{arn: arn, weight: 1})
		}
		for _, tg := range s.structs("ForwardConfig.TargetGroups.member") {
			w, ok, _ := tg.intParam("Weight")
			if !ok {
				w = 1
			}
			if !slices.ContainsFunc(a.targetGroups, func(x weightedTG) bool { return x.arn == tg.get("TargetGroupArn") }) {
				a.targetGroups = append(a.targetGroups, weightedTG{arn: tg.get("TargetGroupArn"), weight: w})
			}
		}
		if len(a.targetGroups) == 0 {
			return nil, validation("A target group ARN must be specified for a forward action")
		}
		out = append(out, a)
	}
	return out, nil
}

// checkListener validates a (new or modified) listener against its load
// balancer, its target groups and the load balancer's other listeners.
func (e *Emulator) checkListener(l *listener, lb *loadBalancer) error {
	allowed := []string{"HTTP", "HTTPS"}
	if lb.lbType == lbTypeNetwork {
		allowed = networkProtocols
	}
	if !slices.Contains(allowed, l.protocol) {
		return apiErr("UnsupportedProtocol", "Listener protocol '%s' must be one of '%s'", l.protocol, strings.Join(allowed, ", "))
	}
	if l.port < 1 || l.port > 65535 {
		return validation("Listener port '%d' must be within 1-65535", l.port)
	}
	if lb.ipAddressType == ipTypeDualstack && isUDP(l.protocol) && !lb.prefixSourceNAT {
		return udpOnDualstack()
	}
	if (l.protocol == "TLS" || l.protocol == "HTTPS") && len(l.certificates) == 0 {
		return validation("A certificate must be specified for %s listeners", l.protocol)
	}
	for _, a := range l.actions {
		for _, wtg := range a.targetGroups {
			tg, err := e.tgByARN(wtg.arn)
			if err != nil {
				return err
			}
			if tg.vpcID != lb.vpcID {
				return validation("Target group '%s' is not in the load balancer's VPC '%s'", tg.arn, lb.vpcID)
			}
			if tg.ipType == tgTypeIPv6 && lb.ipAddressType != ipTypeDualstack {
				return ipv6TGOnIPv4LB()
			}
			if !slices.Contains(listenerTGProtocols[l.protocol], tg.protocol) {
				return apiErr("IncompatibleProtocols", "Listener protocol '%s' is not compatible with target group protocol '%s'", l.protocol, tg.protocol)
			}
			// A network load balancer's target group serves that load balancer only.
			for _, other := range e.tgLoadBalancers(tg) {
				if other != lb.arn && lb.lbType == lbTypeNetwork {
					return apiErr("TargetGroupAssociationLimit", "The following target groups cannot be associated with more than one load balancer: '%s'", tg.arn)
				}
			}
		}
	}
	return nil
}

func listenerCertificates(p params) []string {
	var certs []string
	for _, c := range p.structs("Certificates.member") {
		certs = append(certs, c.get("CertificateArn"))
	}
	return certs
}

func (e *Emulator) createListener(p params) (any, error) {
	lb, err := e.lbParam(p)
	if err != nil {
		return nil, err
	}
	port, _, err := p.intParam("Port")
	if err != nil {
		return nil, validation("Listener port '%s' must be within 1-65535", p.get("Port"))
	}
	actions, err := parseActions(p)
	if err != nil {
		return nil, err
	}
	tags, err := elbTagParams(p, "Tags.member")
	if err != nil {
		return nil, err
	}
	l := &listener{
		lbARN: lb.arn, protocol: p.get("Protocol"), port: port, actions: actions,
		sslPolicy: p.get("SslPolicy"), certificates: listenerCertificates(p), tags: tags,
	}
	if l.protocol == "" {
		return nil, validation("A listener protocol must be specified")
	}
	if err := e.checkListener(l, lb); err != nil {
		return nil, err
	}
	if err := e.checkListenerTLS(l.certificates, l.sslPolicy); err != nil {
		return nil, err
	}
	// Idempotent: the same port with the same settings returns the listener.
	for _, other := range e.listeners.All() {
		if other.lbARN != lb.arn || other.port != port {
			continue
		}
		if other.protocol == l.protocol && fmt.Sprint(other.actions) == fmt.Sprint(l.actions) {
			return listenersResponse{Listeners: []xmlListener{xmlListenerOf(other)}}, nil
		}
		return nil, apiErr("DuplicateListener", "A listener already exists on this port for this load balancer '%s'", lb.arn)
	}
	seq := e.nextSeq()
	l.arn = strings.Replace(lb.arn, ":loadbalancer/", ":listener/", 1) + fmt.Sprintf("/%016x", seq)
	if l.protocol == "TLS" || l.protocol == "HTTPS" {
		l.sslPolicy = orDefault(l.sslPolicy, "ELBSecurityPolicy-2016-08")
	}
	e.listeners.Put(l)
	return listenersResponse{Listeners: []xmlListener{xmlListenerOf(l)}}, nil
}

type xmlWeightedTG struct {
	TargetGroupArn string `xml:"TargetGroupArn"`
	Weight         int    `xml:"Weight"`
}

type xmlAction struct {
	Type           string `xml:"Type"`
	TargetGroupArn string `xml:"TargetGroupArn,omitempty"`
	Order          int    `xml:"Order"`
	ForwardConfig  struct {
		TargetGroups []xmlWeightedTG `xml:"TargetGroups>member"`
		Stickiness   bool            `xml:"TargetGroupStickinessConfig>Enabled"`
	} `xml:"ForwardConfig"`
}

type xmlCert struct {
	CertificateArn string `xml:"CertificateArn"`
}

type xmlListener struct {
	ListenerArn     string      `xml:"ListenerArn"`
	LoadBalancerArn string      `xml:"LoadBalancerArn"`
	Port            int         `xml:"Port"`
	Protocol        string      `xml:"Protocol"`
	Certificates    []xmlCert   `xml:"Certificates>member"`
	SslPolicy       string      `xml:"SslPolicy,omitempty"`
	DefaultActions  []xmlAction `xml:"DefaultActions>member"`
}

type listenersResponse struct {
	Listeners  []xmlListener `xml:"Listeners>member"`
	NextMarker string        `xml:"NextMarker,omitempty"`
}

func xmlListenerOf(l *listener) xmlListener {
	x := xmlListener{
		ListenerArn: l.arn, LoadBalancerArn: l.lbARN, Port: l.port, Protocol: l.protocol,
		SslPolicy: l.sslPolicy,
	}
	for _, c := range l.certificates {
		x.Certificates = append(x.Certificates, xmlCert{CertificateArn: c})
	}
	for _, a := range l.actions {
		xa := xmlAction{Type: "forward", Order: a.order}
		// Like ELBv2, a single-group forward also reports TargetGroupArn.
		if len(a.targetGroups) == 1 {
			xa.TargetGroupArn = a.targetGroups[0].arn
		}
		for _, tg := range a.targetGroups {
			xa.ForwardConfig.TargetGroups = append(xa.ForwardConfig.TargetGroups, xmlWeightedTG{TargetGroupArn: tg.arn, Weight: tg.weight})
		}
		x.DefaultActions = append(x.DefaultActions, xa)
	}
	return x
}

func (e *Emulator) listenerParam(p params) (*listener, error) {
	return elbLookup(e.listeners, p.get("ListenerArn"), arnListener, "listener", "ListenerNotFound", "Listener '%s' not found")
}

func (e *Emulator) describeListeners(p params) (any, error) {
	arns := p.list("ListenerArns.member")
	lbARN := p.get("LoadBalancerArn")
	switch {
	case len(arns) == 0 && lbARN == "":
		return nil, validation("You must specify either listener ARNs or a load balancer ARN")
	case len(arns) > 0 && lbARN != "":
		return nil, validation("Listener ARNs and a load balancer ARN cannot be specified at the same time")
	}
	if lbARN != "" {
		if _, err := e.lbParam(p); err != nil {
			return nil, err
		}
	}
	notFound := func(missing []string) error {
		return apiErr("ListenerNotFound", "Listeners '[%s]' not found", strings.Join(missing, ", "))
	}
	ofLB := func(l *listener) bool { return lbARN == "" || l.lbARN == lbARN }
	ls, next, err := elbDescribe(e.listeners, p, arns, notFound, ofLB)
	if err != nil {
		return nil, err
	}
	resp := listenersResponse{NextMarker: next}
	for _, l := range ls {
		resp.Listeners = append(resp.Listeners, xmlListenerOf(l))
	}
	return resp, nil
}

func (e *Emulator) modifyListener(p params) (any, error) {
	l, err := e.listenerParam(p)
	if err != nil {
		return nil, err
	}
	lb, _ := e.loadBalancers.Get(l.lbARN) // deleting a load balancer deletes its listeners
	updated := *l
	if p.get("Port") != "" {
		if updated.port, err = strconv.Atoi(p.get("Port")); err != nil {
			return nil, validation("Listener port '%s' must be within 1-65535", p.get("Port"))
		}
	}
	updated.protocol = orDefault(p.get("Protocol"), l.protocol)
	updated.sslPolicy = orDefault(p.get("SslPolicy"), l.sslPolicy)
	if certs := listenerCertificates(p); len(certs) > 0 {
		updated.certificates = certs
	}
	if p.has("DefaultActions") {
		if updated.actions, err = parseActions(p); err != nil {
			return nil, err
		}
	}
	if err := e.checkListener(&updated, lb); err != nil {
		return nil, err
	}
	if err := e.checkListenerTLS(listenerCertificates(p), p.get("SslPolicy")); err != nil {
		return nil, err
	}
	for _, other := range e.listeners.All() {
		if other != l && other.lbARN == l.lbARN && other.port == updated.port {
			return nil, apiErr("DuplicateListener", "A listener already exists on this port for this load balancer '%s'", lb.arn)
		}
	}
	*l = updated
	return listenersResponse{Listeners: []xmlListener{xmlListenerOf(l)}}, nil
}

func (e *Emulator) deleteListener(p params) (any, error) {
	l, err := e.listenerParam(p)
	if err != nil {
		return nil, err
	}
	e.listeners.Delete(l.arn)
	return emptyResponse{}, nil
}
