package aws

// Internet gateways. Clients decide whether a subnet is public by its
// route table: public means a 0.0.0.0/0 route to an igw- (the upstream
// AWS CCM does exactly this), so the default fixture has one.

type internetGateway struct {
	id    string
	vpcID string // "" when detached
	tags  map[string]string
}

// createInternetGateway makes a gateway attached to vpcID, which callers
// have checked exists.
func (e *Emulator) createInternetGateway(vpcID string, tags map[string]string) *internetGateway {
	id, _ := e.newID("igw")
	g := &internetGateway{id: id, vpcID: vpcID, tags: copyTags(tags)}
	e.internetGateways.Put(g)
	return g
}

type xmlIGWAttachment struct {
	VpcID string `xml:"vpcId"`
	// EC2 reports an attached internet gateway's attachment as
	// "available", not "attached" as for other attachments.
	State string `xml:"state"`
}

type xmlInternetGateway struct {
	InternetGatewayID string             `xml:"internetGatewayId"`
	OwnerID           string             `xml:"ownerId"`
	Attachments       []xmlIGWAttachment `xml:"attachmentSet>item"`
	Tags              []ec2Tag           `xml:"tagSet>item"`
}

type describeInternetGatewaysResponse struct {
	InternetGateways []xmlInternetGateway `xml:"internetGatewaySet>item"`
	NextToken        string               `xml:"nextToken,omitempty"`
}

func (e *Emulator) internetGatewayFields() fields[*internetGateway] {
	attached := func(g *internetGateway, v string) []string {
		if g.vpcID == "" {
			return nil
		}
		return []string{v}
	}
	return fields[*internetGateway]{
		"internet-gateway-id": func(g *internetGateway) []string { return []string{g.id} },
		"owner-id":            func(*internetGateway) []string { return []string{e.cfg.AccountID} },
		"attachment.vpc-id":   func(g *internetGateway) []string { return attached(g, g.vpcID) },
		"attachment.state":    func(g *internetGateway) []string { return attached(g, "available") },
	}
}

func (e *Emulator) describeInternetGateways(p params) (any, error) {
	gws, next, err := ec2Describe(e.internetGateways, p, p.list("InternetGatewayId"),
		notFound{"InvalidInternetGatewayID.NotFound", "The internetGateway ID %s does not exist"},
		e.internetGatewayFields(), func(g *internetGateway) map[string]string { return g.tags })
	if err != nil {
		return nil, err
	}
	resp := describeInternetGatewaysResponse{NextToken: next}
	for _, g := range gws {
		x := xmlInternetGateway{InternetGatewayID: g.id, OwnerID: e.cfg.AccountID, Tags: ec2Tags(g.tags)}
		if g.vpcID != "" {
			x.Attachments = []xmlIGWAttachment{{VpcID: g.vpcID, State: "available"}}
		}
		resp.InternetGateways = append(resp.InternetGateways, x)
	}
	return resp, nil
}
