package checkpoint

import "testing"

// FuzzOpenManifest: any bytes are a manifest or an error, never a panic; a
// manifest whose checksum holds is one that was sealed.
func FuzzOpenManifest(f *testing.F) {
	f.Add(sealManifest([]byte(`{"format":1,"id":3,"kind":"checkpoint","files":[{"name":"a","size":1,"sha256":"00"}]}`)))
	f.Add([]byte("{}\nsha256 00\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := openManifest(data)
		if err == nil && m.Format != FormatVersion {
			t.Errorf("a manifest of format %d accepted", m.Format)
		}
	})
}
