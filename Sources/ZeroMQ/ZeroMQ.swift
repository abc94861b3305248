// ZeroMQ — placeholder until its module lands.
