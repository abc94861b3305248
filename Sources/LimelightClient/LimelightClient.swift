// LimelightClient — placeholder until its module lands.
