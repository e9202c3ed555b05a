package redisaddr_test

import (
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"

	"github.com/pgw-go/pgw/internal/redisaddr"
)

func TestOfNamesTheAddressesAndNoCredential(t *testing.T) {
	c := goredis.NewClient(&goredis.Options{Addr: "10.0.0.7:6380", Username: "u", Password: "sk-PW"})
	defer c.Close()
	assert.Equal(t, "10.0.0.7:6380", redisaddr.Of(c))

	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{"10.0.0.1:7000", "10.0.0.2:7001"}, Password: "sk-PW"})
	defer cc.Close()
	assert.Equal(t, "10.0.0.1:7000,10.0.0.2:7001", redisaddr.Of(cc))

	r := goredis.NewRing(&goredis.RingOptions{Addrs: map[string]string{"a": "10.0.0.3:6379"}})
	defer r.Close()
	assert.Equal(t, "unknown", redisaddr.Of(r), "a client of another kind")
}
