// LimelightCLI — placeholder until its module lands.
