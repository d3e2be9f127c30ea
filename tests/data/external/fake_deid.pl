#!/usr/bin/perl
# A stand-in for PhysioNet's deid.pl, for tests: the same command line
# (perl deid.pl PREFIX CONFIG, run in deid's folder), the same record format
# in PREFIX.text, and the same outputs: PREFIX.phi ("Patient N<TAB>Note M"
# then "START<TAB>START<TAB>END" byte offsets per PHI, counted from the line
# after START_OF_RECORD) and PREFIX.res (each PHI replaced by a [**marker**]).
# It finds only dates (MM/DD/YYYY), phone numbers (NNN-NNN-NNNN) and 7-digit
# numbers. FAKE_DEID_FAIL=1 makes it exit with status 3.
use strict;
use warnings;

die "usage: deid.pl PREFIX CONFIG\n" unless @ARGV == 2;
my ($prefix, $config) = @ARGV;
exit 3 if $ENV{FAKE_DEID_FAIL};
open(my $cf, '<', $config) or die "Cannot open $config";
close $cf;
open(my $in, '<', "$prefix.text") or die "Cannot open $prefix.text";
open(my $phi, '>', "$prefix.phi") or die "Cannot open $prefix.phi";
open(my $res, '>', "$prefix.res") or die "Cannot open $prefix.res";
my ($patient, $note, $text) = (0, 0, "");
while (my $line = <$in>) {
    if ($line =~ /^START_OF_RECORD=(\d+)\|+(\d+)\|+/) {
        ($patient, $note, $text) = ($1, $2, "");
        print $res $line;
        next;
    }
    if ($line =~ /^\|\|\|\|END_OF_RECORD/) {
        print $phi "Patient $patient\tNote $note\n";
        my ($out, $last) = ("", 0);
        while ($text =~ /(\d{2}\/\d{2}\/\d{4}|\d{3}-\d{3}-\d{4}|\b\d{7}\b)/g) {
            my ($s, $e, $found) = ($-[0], $+[0], $1);
            print $phi "$s\t$s\t$e\n";
            my $marker = $found =~ /\// ? "Date range (1)" : $found =~ /-/ ? "Telephone/Fax (1)" : "Unit Number 12";
            $out .= substr($text, $last, $s - $last) . "[**$marker**]";
            $last = $e;
        }
        $out .= substr($text, $last);
        print $res $out, $line;
        next;
    }
    $text .= $line;
}
close $phi;
close $res;
