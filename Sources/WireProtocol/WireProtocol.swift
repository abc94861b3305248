// WireProtocol — placeholder until its module lands.
