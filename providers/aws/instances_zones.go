package aws

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/flight"
)

// zoneIDCache maps zone names (eu-west-1a) to zone IDs (euw1-az1) for the
// topology.k8s.aws/zone-id label. Zone names are shuffled per account,
// zone IDs are not, which is why tools want the ID. The region's zones
// hardly ever change, so they are fetched once and again only when a zone
// is missing, at most once per minRefetch.
type zoneIDCache struct {
	ec2        *ec2Calls
	clock      clock.PassiveClock
	minRefetch time.Duration

	fetch flight.Group[map[string]string]

	mu        sync.Mutex
	ids       map[string]string
	fetchedAt time.Time
}

// zoneID returns the zone's ID, or "" if the region has no such zone.
func (z *zoneIDCache) zoneID(ctx context.Context, zone string) (string, error) {
	if id, ok, recent := z.cached(zone); ok || recent {
		return id, nil
	}
	ids, err := z.fetch.Do(ctx, "zones", func(ctx context.Context) (map[string]string, error) {
		z.mu.Lock()
		ids, recent := z.ids, z.ids != nil && z.clock.Since(z.fetchedAt) < z.minRefetch
		z.mu.Unlock()
		if _, ok := ids[zone]; ok || recent {
			return ids, nil
		}
		return z.describe(ctx)
	})
	if err != nil {
		return "", err
	}
	return ids[zone], nil
}

// cached answers from the map; recent says a miss needs no refetch yet.
func (z *zoneIDCache) cached(zone string) (id string, ok, recent bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	id, ok = z.ids[zone]
	return id, ok, z.ids != nil && z.clock.Since(z.fetchedAt) < z.minRefetch
}

func (z *zoneIDCache) describe(ctx context.Context) (map[string]string, error) {
	out, err := z.ec2.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
	if err != nil {
		return nil, fmt.Errorf("describe availability zones: %w", err)
	}
	ids := make(map[string]string, len(out.AvailabilityZones))
	for _, az := range out.AvailabilityZones {
		ids[aws.ToString(az.ZoneName)] = aws.ToString(az.ZoneId)
	}
	klog.FromContext(ctx).V(2).Info("Fetched availability zone IDs", "zones", ids)
	z.mu.Lock()
	z.ids, z.fetchedAt = ids, z.clock.Now()
	z.mu.Unlock()
	return ids, nil
}
