// Command smsform is Terraform for SMS campaigns.
package main

func main() {}
